"""The result files' schema and upkeep: results_schema.py (versions, upgrades; imported as
`from results import results_schema` with scripts/ on sys.path, as by analyze_results.py, the
runner and the analysis package), and the commands migrate_results.py, correct_source.py and
conv_targets.py, each of which puts scripts/ first on sys.path itself."""
