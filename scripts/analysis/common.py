"""Shared by the suites' reports (scripts/analyze_results.py picks one per results file): reading
and checking result files (results/README.md, schema_version 2, or 1 upgraded as it is read by
scripts/results/results_schema.py), the fields every suite's records have, number and Markdown
formatting, the system table, atomic writing of the report and its plots, and matplotlib (Agg)
with its fallback: when the python3 that runs the script lacks matplotlib and /usr/bin/python3
(Debian's python3-matplotlib) is another interpreter, the script runs itself again with it; when
that lacks it too, a report says that no plots were made.
"""

import json
import math
import os
import shlex
import sys
import tempfile

from results.results_schema import SCHEMA_VERSION, DescriptorError, upgrade

PROG = "analyze_results.py"
DTYPE_ORDER = ["fp32", "tf32", "fp16", "bf16"]
# Each suite's program, the name its version and log lines carry.
PROGRAM_OF_SUITE = {"conv": "myconv", "ops": "myops", "mlp": "mymlp",
                    "transformer": "mytransformer"}
# analyze_results.py --report-only: the report's text without plots (plots/ left as it is).
OPTIONS = {"report_only": False}


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit code 2."""


# ---- reading -------------------------------------------------------------------------------

def number(x):
    """A finite JSON number as float, else None (null, strings, booleans, NaN)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def load(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or e}")
    except UnicodeDecodeError:
        raise InputError(f"'{path}' is not JSON (not UTF-8 text)")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"'{path}' is not JSON: {e}")
    if not isinstance(doc, dict):
        raise InputError(f"'{path}': the top level is not an object (not a myconv results file)")
    version = doc.get("schema_version")
    if isinstance(version, bool) or version not in (1, SCHEMA_VERSION):
        raise InputError(f"'{path}': schema_version {json.dumps(version)}, this script reads "
                         f"1 and {SCHEMA_VERSION}")
    results = doc.get("results")
    if not isinstance(results, list):
        raise InputError(f"'{path}': 'results' is not an array")
    if not all(isinstance(r, dict) for r in results):
        bad = next(i for i, r in enumerate(results) if not isinstance(r, dict))
        raise InputError(f"'{path}': results[{bad}] is not an object")
    try:
        upgrade(doc)  # version 1: descriptors and params as version 2 writes them
    except DescriptorError as e:
        raise InputError(f"'{path}': {e}")
    for i, r in enumerate(results):
        if not isinstance(r, dict):
            raise InputError(f"'{path}': results[{i}] is not an object")
        for field in ("backend", "problem", "status"):
            if not isinstance(r.get(field), str):
                raise InputError(f"'{path}': results[{i}] has no string '{field}'")
    system = doc.get("system")
    run = doc.get("run")
    systems = doc.get("systems")  # a merged run's parts (scripts/merge_results.py, --gpus)
    return {"path": path, "system": system if isinstance(system, dict) else {},
            "results": results, "schema_version": version,
            "run": run if isinstance(run, dict) else {},
            "systems": systems if isinstance(systems, list) else []}


def stats(r, figure):
    s = r.get(figure)
    return s if isinstance(s, dict) else {}


def median(r, figure):
    return number(stats(r, figure).get("median"))


def primary(r):
    """(time in ms, figure) of the primary time: GPU median when present, else total median."""
    gpu = median(r, "gpu_time_ms")
    if gpu is not None:
        return gpu, "gpu_time_ms"
    total = median(r, "total_time_ms")
    if total is not None:
        return total, "total_time_ms"
    return None, None


def figure_name(figure):
    return {"gpu_time_ms": "GPU median", "total_time_ms": "total median"}.get(figure, "n/a")


def gpu_info(system):
    gpus = system.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        cuda = system.get("cuda")
        gpus = cuda.get("devices") if isinstance(cuda, dict) else None
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        return gpus[0]
    return None


def intensity(r):
    flop, nbytes = number(r.get("flop")), number(r.get("bytes"))
    if flop is None or nbytes is None or nbytes <= 0:
        return None
    return flop / nbytes


def params(r):
    p = r.get("params")
    return p if isinstance(p, dict) else {}


def dtype_of(r):
    d = r.get("dtype") or params(r).get("dtype")
    return d if isinstance(d, str) and d else "fp32"


def layout_of(r):
    lay = params(r).get("layout")
    if isinstance(lay, str) and lay:
        return lay
    return "nhwc" if r["problem"].endswith("nhwc") else "nchw"


def suite_of(r):
    s = r.get("suite")
    return s if isinstance(s, str) and s else "conv"


def device_of(r):
    d = r.get("device")
    if isinstance(d, str) and d:
        return d
    return "cuda" if r["backend"].endswith("_cuda") or r["backend"] == "cudnn" else "cpu"


def passed(r):
    return r.get("status") == "passed"


def correctness(r):
    c = r.get("correctness")
    return c if isinstance(c, dict) else {}


def case_key(r):
    return (suite_of(r), r["backend"], r["problem"], dtype_of(r), layout_of(r))


def problem_key(r):
    return (suite_of(r), r["problem"], dtype_of(r), layout_of(r))


# ---- formatting ----------------------------------------------------------------------------

def fmt(x, digits=4):
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def fmt_x(x):
    return "n/a" if x is None else f"{x:.3g}x"


def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(headers, rows):
    out = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
           "| " + " | ".join("---" for _ in headers) + " |"]
    for row in rows:
        out.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    return out


def shorten(text, limit=120):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def trust_section(inputs):
    """The trust check's findings (scripts/references/trust_check.py's trust.json beside an input
    results.json): our LibTorch GPU medians against Python PyTorch's on the same GPU; the flagged
    rows listed. Empty where no input has one."""
    out = []
    for d in inputs:
        path = os.path.join(os.path.dirname(os.path.abspath(d["path"])), "trust.json")
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            cases = list(doc["cases"])
            low, high = float(doc["low"]), float(doc["high"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        ratios = sorted(c["ratio"] for c in cases if isinstance(c.get("ratio"), (int, float)))
        flagged = [c for c in cases if c.get("flagged")]
        n = len(ratios)
        mid = f"{(ratios[(n - 1) // 2] + ratios[n // 2]) / 2:.3f}" if n else "n/a"
        out += ["## Trust check: our LibTorch figures against Python PyTorch's", "",
                f"`{os.path.basename(path)}` beside `{d['path']}` "
                "(scripts/references/trust_check.py: the same problems timed in Python PyTorch on "
                "the same GPU, in each record's timing mode). Ratio = our GPU median / Python's; "
                f"outside {low}-{high} is flagged. {len(cases)} cases, median ratio {mid}, "
                f"{len(flagged)} flagged.", ""]
        if flagged:
            out += md_table(["suite", "problem", "dtype", "timing", "ours ms", "python ms",
                             "ratio or error"],
                            [[c.get("suite"), f"`{c.get('problem')}`", c.get("dtype"),
                              c.get("timing_mode"), fmt(c.get("ours_gpu_median_ms")),
                              fmt(c.get("python_gpu_median_ms")),
                              f"{c['ratio']:.3f}" if "ratio" in c else
                              shorten(str(c.get("error")), 100)]
                             for c in flagged]) + [""]
    return out


NOT_RUN = ("skipped", "unsupported")


def not_run_lines(items):
    """Backends that could not run here, one line per backend, status and reason with the number
    of its cases (items: (backend, status, reason) of the cases skipped or unsupported), so that
    a CPU run's skipped GPU backends take a line each, not one row per case."""
    groups = {}
    for backend, status, reason in items:
        key = (backend, status, shorten(reason or "no reason", 200))
        groups[key] = groups.get(key, 0) + 1
    return [f"- `{b}` {s}, {n} case(s): {reason}" for (b, s, reason), n in sorted(groups.items())]


def command_line():
    return shlex.join(["python3"] + sys.argv)


# ---- writing -------------------------------------------------------------------------------

def temp_beside(path):
    """A new temporary file in path's folder: (fd, name). OSError names path, not the temp."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        return tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                suffix=".tmp")
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None


def write_atomic(path, data):
    """Writes data (str or bytes) to a temporary file beside path, then renames it."""
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_figure(fig, path):
    """Writes fig as PNG to path (atomically). With MYCONV_REPORT_NO_PNG=1 the figure is built but
    neither drawn nor written (two thirds of a report's time):
    tests/analysis/test_committed_reports.py remakes every committed report's text, which is the
    same either way, and checks the committed plots themselves."""
    if os.environ.get("MYCONV_REPORT_NO_PNG") == "1":
        return
    fd, tmp = temp_beside(path)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_report(out_dir, text, plot_dir, n_plots):
    """Writes report.md and index.html (the report as a page that shows its plots,
    scripts/analysis/html.py) in out_dir, and says so on stdout."""
    from analysis.html import report_page
    path = os.path.join(out_dir, "report.md")
    write_atomic(path, text)
    write_atomic(os.path.join(out_dir, "index.html"), report_page(text))
    where = "" if OPTIONS["report_only"] else f" and {n_plots} plot(s) in {plot_dir}"
    print(f"wrote {path}, index.html{where}")


# ---- system --------------------------------------------------------------------------------

def system_section(doc):
    """The Markdown table of one input's `system`: host, versions, source, libraries, GPUs."""
    s = doc["system"]
    out = [f"### `{doc['path']}`", ""]
    suites = {suite_of(r) for r in doc["results"]} or {doc["run"].get("suite") or "conv"}
    program = PROGRAM_OF_SUITE.get(suites.pop(), "myconv") if len(suites) == 1 else "myconv"
    fields = [("host", "host"), ("run started (UTC)", "utc_time"),
              (f"{program} version", "project_version"), ("git commit", "git_commit"),
              ("CPU", "cpu_model"), ("logical cores", "cpu_logical_cores"),
              ("host memory, bytes", "host_memory_bytes"), ("OS", "os"), ("kernel", "kernel"),
              ("compiler", "compiler"), ("load average 1/5/15 min", "load_average_1_5_15min")]
    rows = []
    for title, field in fields:
        v = s.get(field)
        if v is None:
            continue
        if isinstance(v, list):
            v = ", ".join(fmt(number(x)) if number(x) is not None else str(x) for x in v)
        elif isinstance(v, (dict, bool)):
            v = json.dumps(v)
        rows.append([title, v])
    src = s.get("source")
    if isinstance(src, dict):
        # What ran: the commit, whether the tree differed (and where the difference is kept), how
        # the record was made; a corrected record keeps what the file first said, and why.
        diff = ("not known whether the tree differed" if src.get("dirty") is None else
                "no difference" if not src.get("dirty") else
                f"difference in `{src['diff_file']}`" if src.get("diff_file") else
                "a difference, not kept" if src.get("diff_lost") or src.get("diff_bytes") is None
                else f"a difference of {src.get('diff_bytes')} bytes, not beside this file")
        rows.append(["source", f"{src.get('commit') or 'unknown'} ({src.get('origin')}; {diff})"])
        for title, field in (("source recorded at first", "recorded_git_commit"),
                             ("source correction", "correction")):
            if src.get(field):
                rows.append([title, src[field]])
        if src.get("modified_since_stamp"):
            rows.append(["changed since the source stamp",
                         ", ".join(src["modified_since_stamp"])])
    cuda = s.get("cuda")
    if isinstance(cuda, dict):
        for field in ("driver_version", "runtime_version"):
            if cuda.get(field) is not None:
                rows.append([f"CUDA {field.replace('_', ' ')}", cuda[field]])
    out += md_table(["field", "value"], rows) if rows else ["No system fields in this file."]
    libs = s.get("libraries")
    if isinstance(libs, dict) and libs:
        out += ["", "Libraries (`system.libraries`):", ""]
        out += md_table(["backend", "library"], [[k, v] for k, v in libs.items()])
    gpus = s.get("gpus")
    if isinstance(gpus, list) and gpus:
        out += ["", "GPUs (`system.gpus`):", ""]
        keys = []
        for g in gpus:
            if isinstance(g, dict):
                keys += [k for k in g if k not in keys]
        rows = []
        for g in gpus:
            if isinstance(g, dict):
                rows.append([json.dumps(g[k]) if isinstance(g.get(k), (dict, list, bool))
                             else ("" if g.get(k) is None else g[k]) for k in keys])
        out += md_table(keys, rows)
    elif isinstance(gpus, list):
        out += ["", "No GPU recorded (`system.gpus` is empty)."]
    return out + [""] + systems_section(doc)


def systems_section(doc):
    """A merged run's (scripts/merge_results.py, --gpus) parts' systems side by side."""
    parts = [p for p in doc.get("systems") or [] if isinstance(p, dict)]
    if len(parts) < 2:
        return []
    def gpus(s):
        return ", ".join(str(g.get("name")) for g in s.get("gpus") or [] if isinstance(g, dict))
    fields = [("host", lambda s: s.get("host")), ("CPU", lambda s: s.get("cpu_model")),
              ("logical cores", lambda s: s.get("cpu_logical_cores")),
              ("GPUs", lambda s: gpus(s) or "none"),
              ("git commit", lambda s: s.get("git_commit")),
              ("run started (UTC)", lambda s: s.get("utc_time"))]
    rows = [[title] + ["" if get(p.get("system") or {}) is None else get(p.get("system") or {})
                       for p in parts] for title, get in fields]
    return (["The parts this run was merged from, each with its own system (`systems`):", ""]
            + md_table(["field"] + [f"`{p.get('part')}`" for p in parts], rows) + [""])


def gpu_models_note(results):
    """Lines saying that the GPU results were measured on several GPU models (each result's
    `gpu.name`); none when they were not."""
    names = {}
    for r in results:
        g = r.get("gpu")
        if r.get("device") == "cuda" and isinstance(g, dict) and g.get("name"):
            names[g["name"]] = names.get(g["name"], 0) + 1
    if len(names) < 2:
        return []
    return [f"**Mixed GPU models**: these GPU results come from "
            + ", ".join(f"{n} ({c} results)" for n, c in sorted(names.items()))
            + "; a ratio may pair cases measured on different models (each result's `gpu`).", ""]


# ---- plots ---------------------------------------------------------------------------------

def matplotlib_or_reason():
    """Imports matplotlib with the Agg backend; see the module docstring for the fallback."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        return matplotlib, None
    except ImportError as e:
        return None, f"matplotlib is not importable by {sys.executable} ({e})"


def maybe_reexec_for_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    system_python = "/usr/bin/python3"
    if (os.environ.get("MYCONV_ANALYZE_REEXEC") != "1" and os.path.exists(system_python)
            and os.path.realpath(sys.executable) != os.path.realpath(system_python)):
        os.environ["MYCONV_ANALYZE_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(system_python, [system_python] + sys.argv)


def plot_note(any_passed):
    """None when plots can be made, else the report's line saying why not (and a warning)."""
    if OPTIONS["report_only"]:
        return "No plots: made with `--report-only`."
    if not any_passed:
        return "No plots: no passed case."
    mpl, why = matplotlib_or_reason()
    if mpl is None:
        print(f"{PROG}: warning: {why}; report written without plots", file=sys.stderr)
        return f"No plots: {why}."
    return None


def output_folders(paths, output_dir):
    """(report folder, plot folder) of a report, the plot folder made: DIR defaults to the folder
    of the first input."""
    out_dir = output_dir or os.path.dirname(paths[0]) or "."
    plot_dir = os.path.join(out_dir, "plots")
    try:
        os.makedirs(out_dir if OPTIONS["report_only"] else plot_dir, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create '{plot_dir}': {e.strerror or e}")
    return out_dir, plot_dir


def remove_stale_plots(plot_dir, names, made):
    """Plots of an earlier report that this one did not make would be mistaken for its own
    (--report-only leaves plots/ alone: it makes none by choice)."""
    if OPTIONS["report_only"]:
        return
    for name in names:
        if name not in made and os.path.exists(os.path.join(plot_dir, name)):
            os.unlink(os.path.join(plot_dir, name))


def plots_markdown(note, plots):
    """The report's plot section: the note, then each plot with its caption."""
    out = ["## Plots", ""]
    if note:
        out += [note, ""]
    for name, caption in plots:
        out += [f"![{caption}](plots/{name})", "", f"*{caption}* (`plots/{name}`)", ""]
    return out


# ---- which suite ---------------------------------------------------------------------------

def suite_of_inputs(inputs):
    """The one suite the inputs' results belong to (`suite`, conv when absent; a file without
    results says it in run.suite, else counts as conv). InputError when they hold several: each
    suite has its own report."""
    found = {}
    for doc in inputs:
        suites = {suite_of(r) for r in doc["results"]}
        if not suites:
            s = doc["run"].get("suite")
            suites = {s if isinstance(s, str) and s else "conv"}
        if len(suites) > 1:
            raise InputError(f"'{doc['path']}' holds results of several suites "
                             f"({', '.join(sorted(suites))}); a report covers one suite")
        found.setdefault(suites.pop(), doc["path"])
    if len(found) > 1:
        raise InputError("the files hold different suites (" + ", ".join(
            f"{s} in '{p}'" for s, p in found.items()) + "); a report covers one suite")
    return next(iter(found), "conv")
