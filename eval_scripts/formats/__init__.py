"""The files a run hands on: what they hold, how they are validated and named (no model, no harness).

- `results`: the results JSON of one run (= a leaderboard submission).
- `submission`: load, validate (the shipped JSON Schema in `schemas/`), package and push a submission.
- `data_names`: how an output names the data it was made from, and whether it says SYNTHETIC.
- `schemas`: the JSON Schemas shipped with the package.
"""
