"""The metric's Hub Space: evaluate's standard Gradio widget, as evaluate's own metrics have.

Loads the script beside this file (so it works in a Space, in this folder or anywhere else);
evaluate's widget shows the card (README.md) next to it. Needs gradio 3.x (the card's
sdk_version); nothing else in the toolkit imports gradio.
"""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).with_name("mis_icc.py")))
launch_gradio_widget(module)
