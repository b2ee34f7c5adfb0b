"""The MIS-Bench leaderboard: validate and score submissions against hidden labels,
write CSV + JSON + a static sortable page, and serve it from a Hub Space.

- `authors`: the real leaderboard page from the authors' public files (`mis-bench leaderboard --from-authors`).
- `disclosure`: what a board publishes: three significant digits, a minimum of videos, ICCs only when hidden.
- `identity`: one identity per entry (normalised names, reserved baselines, duplicates) and the coverage rule.
- `juries`: `mis-bench jury`: several systems' predictions combined into a new system, scored and compared.
- `outputs`: write a leaderboard as JSON, CSV and the static HTML page.
- `page`: the static leaderboard page (one self-contained HTML file).
- `references`: the board's labels, fingerprints and synthetic flag, read alike by the CLI and the Space.
- `received`: who sent each submission and when the board received it (a local folder, a Hub requests repo).
- `scoring`: score every submission in a folder against hidden labels; never stop on a bad one.
- `space_app`: the Hub Space app serving the page.
"""

from eval_scripts.leaderboard.outputs import LeaderboardFiles, write_leaderboard
from eval_scripts.leaderboard.page import render_page
from eval_scripts.leaderboard.references import BoardReferences
from eval_scripts.leaderboard.scoring import BoardRules, build_leaderboard

__all__ = ["build_leaderboard", "BoardRules", "BoardReferences", "write_leaderboard", "render_page", "LeaderboardFiles"]
