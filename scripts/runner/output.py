"""The files the runner writes from its state: RUN/run.json and RUN/cases.jsonl of a new run, and
RUN/results.json and RUN/results.csv, rewritten from every case recorded so far after each case
(temp file + rename), in case-list order. CSV rows are the program's own (core's write_csv),
re-keyed by case; only synthesized records are flattened here, under the program's header. A
mixin of session.Runner, on its state: cases, cases_dir, records, csv_rows, csv_header, system,
models, schema_version, limits, config, suite, program, run_dir; and reference.py's status."""

import json
import os
import socket
import time

from runner.cases import case_key
from runner.common import utc_now, write_atomic

TIME_FIGURES = ("cpu_time_ms", "gpu_time_ms", "total_time_ms", "thread_cpu_time_ms")
# Columns of core's write_csv (core/printers.cpp results_to_csv), used only when no myconv CSV
# exists yet (every invocation died before its first case); otherwise myconv's header is used.
FALLBACK_CSV_HEADER = (
    "suite,backend,device,problem,name,dtype,status,reason,algorithm,workspace_bytes,"
    "compile_time_ms,first_run_ms,"
    + ",".join(f"{f}_{s}" for f in ("cpu_time_ms", "gpu_time_ms", "total_time_ms")
               for s in ("median", "min", "mean", "p10", "p90", "cv", "samples"))
    + ",correct,max_abs_err,rel_l2_err,atol,rtol,mismatches,flop,bytes,gflop_per_s,timing_mode,"
    "runs_per_sample,cold_cache,throttled,sm_mhz_before,sm_mhz_after,command").split(",")


def csv_field(s):
    # The quoting rule of core/printers.cpp csv_field.
    if not any(c in s for c in ',"\n\r'):
        return s
    return '"' + s.replace('"', '""') + '"'


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.9g}"
    if isinstance(v, (dict, list)):
        return ""
    return str(v)


def flatten(rec, header):
    """A CSV row (column -> text) for a record, under any header of core's write_csv."""
    corr = rec.get("correctness") or {}
    clocks = rec.get("clocks") or {}
    row = {}
    for col in header:
        v = None
        if col in rec and not isinstance(rec[col], (dict, list)):
            v = rec[col]
        elif col == "correct":
            v = corr.get("passed")
        elif col in ("max_abs_err", "rel_l2_err", "mismatches"):
            v = corr.get(col)
        elif col in ("atol", "rtol"):
            v = (corr.get("tolerance") or {}).get(col)
        elif col.startswith("sm_mhz_") or col.startswith("mem_mhz_"):
            v = clocks.get(col)
        else:
            for fig in TIME_FIGURES:
                if col.startswith(fig + "_") and isinstance(rec.get(fig), dict):
                    v = rec[fig].get(col[len(fig) + 1:])
        row[col] = csv_value(v)
    return row


class OutputMixin:
    def write_config(self):
        """RUN/cases.jsonl and RUN/run.json of a new run: what --resume and --prepared read back."""
        os.makedirs(self.cases_dir, exist_ok=True)
        write_atomic(os.path.join(self.run_dir, "cases.jsonl"),
                     "".join(json.dumps(c) + "\n" for c in self.cases))
        write_atomic(os.path.join(self.run_dir, "run.json"),
                     json.dumps(self.config, indent=2) + "\n")

    def write_results(self):
        keys = [case_key(c) for c in self.cases]
        results = [self.records[k] for k in keys if k in self.records]
        system = self.system or {"host": socket.gethostname(), "utc_time": utc_now()}
        if self.limits:  # the op suite's limits, measured once for the whole run
            system.update(self.limits)
        if self.models:
            system["models"] = list(self.models.values())
        if isinstance(system.get("source"), dict):
            has_diff = os.path.exists(os.path.join(self.run_dir, "source.diff"))
            system["source"]["diff_file"] = "source.diff" if has_diff else None
        run = {"runner": "scripts/run_all_experiments.sh", "suite": self.suite,
               "label": self.config.get("label"), "cases": len(keys), "recorded": len(results),
               "complete": len(results) == len(keys),
               f"{self.program}_args": self.config["grid_args"] + self.timing_args(),
               "timeout_s": self.config.get("timeout_s"),
               # This session's wall time so far (a resumed run: since the resume).
               "wall_s": round(time.monotonic() - self.session_start, 3)}
        if self.limits:
            run["limits_file"] = "limits.json"
        if self.reference_status():
            run["hf_reference"] = self.reference_status()
        if self.inductor_status():
            run["inductor_reference"] = self.inductor_status()
        doc = {"schema_version": self.schema_version, "system": system, "run": run,
               "results": results}
        write_atomic(os.path.join(self.run_dir, "results.json"),
                     json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        header = self.csv_header or FALLBACK_CSV_HEADER
        lines = [",".join(header)]
        for k in keys:
            if k not in self.records:
                continue
            row = self.csv_rows.get(k) or flatten(self.records[k], header)
            lines.append(",".join(csv_field(row.get(c) or "") for c in header))
        write_atomic(os.path.join(self.run_dir, "results.csv"), "\n".join(lines) + "\n")
