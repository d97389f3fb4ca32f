"""The reports of scripts/analyze_results.py: common.py (reading, system tables, formatting,
writing, plotting helpers), one report module per suite (conv_report.py, ops_report.py,
mlp_report.py, transformer_report.py) with its model and plots beside it where it has them
(conv_model.py, conv_plots.py; ops_model.py, ops_plots.py; transformer_plots.py,
transformer_ops.py), slots.py (where a run's time went), html.py (index.html) and compare.py (two
result files case by case)."""
