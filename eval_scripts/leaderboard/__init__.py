"""The MIS-Bench leaderboard: validate and score submissions against hidden labels,
write CSV + JSON + a static sortable page, and serve it from a Hub Space."""

from eval_scripts.leaderboard.outputs import LeaderboardFiles, write_leaderboard
from eval_scripts.leaderboard.page import render_page
from eval_scripts.leaderboard.scoring import build_leaderboard

__all__ = ["build_leaderboard", "write_leaderboard", "render_page", "LeaderboardFiles"]
