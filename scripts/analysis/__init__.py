"""The reports of scripts/analyze_results.py: common.py (reading, system tables, formatting,
writing, plotting helpers), one module per suite (conv_report.py, ops_report.py) and compare.py
(two result files case by case)."""
