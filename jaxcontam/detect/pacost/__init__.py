"""PaCoST (Zhang et al. 2024, arXiv 2406.18326): is the model more confident on the original than on a rephrasing?

For each item with an accepted rephrasing, the model under test answers the original and the rephrased
question; a confidence is measured for each (question, own answer) pair, and a one-sided paired test asks
whether original confidences exceed rephrased ones (contamination inflates confidence on the seen wording).
One module per job: `settings` (the presets and `PacostSettings`), `confidences` (the registered confidences),
`records` (answers and confidences per item), `significance` (the paired and the calibrated tests) and `results`
(the result types and their summary.json entries).
"""
