#!/usr/bin/env python3
"""Reads result files of the benchmark suites (results/README.md, schema_version 2, or 1 upgraded
as it is read: scripts/results/results_schema.py) and writes a Markdown report with plots, or
compares two result files case by case.

  analyze_results.py RESULTS.json [RESULTS.json ...] [--output-dir DIR] [--report-only]
      writes DIR/report.md, DIR/index.html (the report as a page showing its plots) and
      DIR/plots/*.png (DIR defaults to the folder of the first file); --report-only writes the
      report and the page without plots, plots/ left as it is
  analyze_results.py --compare OLD.json NEW.json [--threshold 0.05] [--output FILE]
      prints a Markdown table (faster / slower / same per case) to stdout, and to FILE

The report is the suite's own (the results' `suite`: conv, myconv's, by scripts/analysis/
conv_report.py; ops, myops', by scripts/analysis/ops_report.py; transformer, mytransformer's and
scripts/references/hf_reference.py's, by scripts/analysis/transformer_report.py); the inputs of one
report hold one suite. Every number in the report is read from the input files or computed from them
by the formula named beside it. Bad input (a missing file, not JSON, another schema_version, results
that are not records, results of several suites) prints one line on stderr and exits 2 before
anything is written; files are written to a temporary name and renamed, so a report is never
partial.

Plots need matplotlib (Debian: python3-matplotlib, which installs into /usr/bin/python3). When the
python3 that runs this script lacks it and /usr/bin/python3 is another interpreter, the script
runs itself again with /usr/bin/python3; when that lacks it too, the report says that no plots
were made.
"""

import argparse
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analysis import conv_report, mlp_report, ops_report, transformer_report  # noqa: E402
from analysis.common import (OPTIONS, PROG, InputError, load,  # noqa: E402
                             maybe_reexec_for_matplotlib, suite_of_inputs)
from analysis.compare import COMPARE_RULE, compare_main  # noqa: E402

REPORTS = {"conv": conv_report, "ops": ops_report, "mlp": mlp_report,
           "transformer": transformer_report}


def report_main(paths, output_dir):
    inputs = [load(p) for p in paths]  # all validated before anything is written
    suite = suite_of_inputs(inputs)
    if suite not in REPORTS:
        raise InputError(f"no report for suite '{suite}' (this script has: "
                         f"{', '.join(REPORTS)})")
    REPORTS[suite].report_main(inputs, paths, output_dir)


# ---- command line --------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv=None):
    epilog = [
        "conv report: report.md holds the system and versions, the incorrect/failed/timeout/"
        "throttled cases, winners, per problem a table of backends (medians, compile time, first "
        "run, speed-up vs LibTorch on the same device, correctness), compile overhead, ratios "
        "against cuDNN and the roofline ceilings; plots/ holds "
        + ", ".join(conv_report.PLOT_FILES) + ".",
        "ops report: " + ops_report.SUMMARY,
        "mlp report: " + mlp_report.SUMMARY,
        "transformer report: " + transformer_report.SUMMARY,
        "compare: " + COMPARE_RULE.replace("`", ""),
        "exit codes: 0 done; 2 bad input or usage (one line on stderr)."]
    parser = Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
                    description=__doc__.strip(),
                    epilog="\n\n".join(textwrap.fill(p, 79) for p in epilog))
    parser.add_argument("inputs", nargs="*", metavar="RESULTS.json",
                        help="result files of one suite (schema_version 1 or 2)")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="where report.md and plots/ go (default: folder of the first file)")
    parser.add_argument("--report-only", action="store_true",
                        help="write report.md and index.html without plots (every suite)")
    parser.add_argument("--compare", nargs=2, metavar=("OLD.json", "NEW.json"),
                        help="compare two result files case by case instead of writing a report")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="--compare: relative change of the median below which a case is "
                             "the same (default 0.05 = 5%%)")
    parser.add_argument("--output", metavar="FILE",
                        help="--compare: also write the table to FILE")
    args = parser.parse_args(argv)
    try:
        if args.compare:
            if args.inputs or args.output_dir or args.report_only:
                parser.error("--compare takes exactly two files and no --output-dir or "
                             "--report-only")
            if not args.threshold >= 0:
                parser.error("--threshold must be 0 or more")
            compare_main(args.compare[0], args.compare[1], args.threshold, args.output)
        else:
            if not args.inputs:
                parser.error("give at least one results file, or --compare OLD NEW")
            if args.output:
                parser.error("--output belongs to --compare; use --output-dir for a report")
            OPTIONS["report_only"] = args.report_only
            if not args.report_only:
                maybe_reexec_for_matplotlib()
            report_main(args.inputs, args.output_dir)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # an output folder or file that cannot be written
        print(f"{PROG}: error: cannot write '{e.filename}': {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
