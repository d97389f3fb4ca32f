"""The case runner of scripts/runner/run_cases.py (the entry point; scripts/run_all_experiments.sh
calls it): session.py (the Runner: top level, progress line, report, --commit) with its parts as
mixins, cases.py (case list, settings, identity, resume checks), isolation.py (the program's
processes, many problems each, per-case limit, crash and OOM records), queue.py (the problems still
to run, shared by the GPU workers of --gpus), limits.py (the op suite's limits, measured once),
output.py (run.json, cases.jsonl, results.json, results.csv), reference.py (the transformer
suite's Hugging Face reference, after the cases); common.py is what they share.

Design (why it is built this way):
- The case list comes from myconv itself (`--list-cases`: the settings expanded into problems, one
  JSON identity record per (problem, backend)), so the runner never re-implements the expansion,
  and N, the ETA and --resume work on exactly the cases myconv would run. It is saved as
  RUN/cases.jsonl with the settings in RUN/run.json; --resume reads both back.
- One myconv process runs many problems (descriptors with dtype and layout, `--problem`
  repeated, up to isolation.BATCH_PROBLEMS that share one backend list, in case-list order)
  back to back, each with all its backends not recorded yet: the process start, library load
  and device context are paid once per invocation, not per problem (issue: 70% of a GPU sweep's
  wall time went elsewhere than measuring), and the inputs and the float64 reference are made
  once per problem. --isolate runs one problem per process (run.json `isolate`). myconv
  rewrites its --json/--csv (atomically) after every case, into RUN/cases/NNNN.json/.csv; the
  runner polls that file, so it knows each case as it finishes.
- Per-case time limit: a watchdog kills myconv's process group (SIGTERM, SIGKILL after a grace
  period, like `timeout --kill-after`) when no case has finished for --timeout seconds. Because
  myconv runs its problems and their backends in the listed order and records each case at
  once, the first missing case is the one that hung or crashed: it gets a synthesized record
  (status `timeout`, or `failed` with `crashed: signal N` / `out of memory`) in
  RUN/cases/NNNN-runner.json, and the rest of the invocation's cases go back to the front of the
  queue and run in a new process. Nothing is run twice.
- Where the time goes: each record's `slot_ms` holds the program's split of its slot (process
  start, device context, reference, compile, first run, sampling, check, writing;
  core/driver.hpp finish_case) and the runner's view of it (`wall`, `runner`; `lost` for a
  synthesized record), which the report sums per backend (analysis/slots.py).
- --gpus (workers.py): the GPU workers take their problems from one shared queue (queue.py,
  claims under a file lock), so that the GPUs finish together whatever the cost estimate said.
- After every case RUN/results.json and RUN/results.csv are rewritten from all case files (temp
  file + rename), in case-list order: a kill at any moment leaves valid files of the finished
  cases, and --resume runs only the missing ones. CSV rows are myconv's own (core's write_csv),
  re-keyed by case; only synthesized records are flattened here, under myconv's header.
- Progress goes to the console and to RUN/all_experiments.txt as one plain line per case (no
  carriage returns, flushed per line: readable under nohup); myconv's full output goes to the log
  file (and to the console with --verbose).
- The op suite scores bandwidth against the machine's measured limits (copy bandwidth per device,
  matmul ceiling per dtype), which myops measures at its start: seconds per invocation, and a
  slightly different figure each time. The runner has them measured once per run folder
  (RUN/limits.json, one myops invocation on a tiny matmul per dtype, kept for --resume), runs
  every case with --no-peaks and writes the measured limits into results.json's `system`, so
  that every case of the run is scored against the same figures (scripts/analysis/ops_report.py
  recomputes the efficiencies from them). Should that measurement fail, each invocation measures
  its own, as myops does alone.

- The transformer suite's external reference (Hugging Face transformers,
  scripts/references/hf_reference.py) is a Python process over a whole model's grid, not a case of
  the program: it runs after the cases, once per model and dtype, only where its Python imports
  transformers and torch, into RUN/hf_reference/ with a status file that --resume reads (what
  finished is not run again); the report reads its files beside results.json. Skipped, it says why,
  in the log and the report. The conv suite's PyTorch Inductor reference (--inductor-reference,
  scripts/references/inductor_reference.py) is run the same way (runner/inductor.py): one Python
  process over the run's GPU problems after the cases, into RUN/inductor_reference/ with its status
  file; the report reads its records.

The modules import each other as `runner.X` (and `results.results_schema`): run_cases.py, the entry
point in this folder, puts scripts/ on sys.path in place of its own folder (runner/queue.py must
not stand in for the standard library's queue), which works in the source tree and in an install
(PREFIX/share/myconv/scripts/ with runner/ and results/ as in the source tree).
"""
