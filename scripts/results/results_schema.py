"""The versions of myconv's result format (results/README.md) and the upgrade from older ones.

Shared by scripts/analyze_results.py (reads any version), scripts/runner/run_cases.py and
scripts/results/migrate_results.py (rewrites files in place). Only the standard library.

Version 1 -> 2: conv descriptors moved to benchdnn's grammar. In version 1 `dh`/`dw` were
PyTorch's dilation (1 = dense) and each width field absent from a descriptor followed its height
partner on its own; in version 2 they count the gaps (benchdnn: 0 = dense), and width fields are
written all together wherever any differs from the height's (benchdnn copies the height's only when
no width field is written). `params` gain `dilation_h`/`dilation_w` (PyTorch's). Nothing else
changed, so an upgraded file reads exactly as one written by version 2.
"""

import re

SCHEMA_VERSION = 2

_V1_KEYS = ("g", "mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")


class DescriptorError(ValueError):
    pass


def parse_v1_descriptor(text):
    """A version-1 conv descriptor as a dict of its fields (dh/dw PyTorch's), dtype, layout, name."""
    fields = {}
    dtype, layout, name = "fp32", "nchw", ""
    i = 0
    while i < len(text):
        rest = text[i:]
        if rest.startswith("nchw") or rest.startswith("nhwc"):
            layout, i = rest[:4], i + 4
            continue
        if rest.startswith("dt"):
            m = re.match(r"dt(fp32|tf32|fp16|bf16)", rest)
            if not m:
                raise DescriptorError(f"unknown dtype in '{text}'")
            dtype, i = m.group(1), i + m.end()
            continue
        if rest.startswith('n"'):
            close = text.find('"', i + 2)
            if close < 0:
                raise DescriptorError(f"unterminated name in '{text}'")
            name, i = text[i + 2:close], close + 1
            continue
        key = next((k for k in _V1_KEYS if rest.startswith(k)), None)
        m = re.match(r"\d+", rest[len(key):]) if key else None
        if not m or key in fields:
            raise DescriptorError(f"not a version-1 descriptor: '{text}'")
        fields[key] = int(m.group())
        i += len(key) + m.end()
    if not all(k in fields for k in ("ic", "ih", "oc", "kh")):
        raise DescriptorError(f"not a version-1 descriptor (ic, ih, oc, kh required): '{text}'")
    p = {"g": fields.get("g", 1), "mb": fields.get("mb", 2), "ic": fields["ic"], "oc": fields["oc"]}
    for h, w, default in (("ih", "iw", None), ("kh", "kw", None), ("sh", "sw", 1),
                          ("ph", "pw", 0), ("dh", "dw", 1)):
        p[h] = fields.get(h, default)
        p[w] = fields.get(w, p[h])
    p.update(dtype=dtype, layout=layout, name=name)
    return p


def v2_descriptor(p):
    """The version-2 canonical descriptor (conv/problem.cpp Problem::str) of a 2D problem with
    symmetric padding, given its fields with benchdnn's dh/dw (0 = dense)."""
    square = all(p[h] == p[w] for h, w in (("ih", "iw"), ("kh", "kw"), ("sh", "sw"),
                                             ("ph", "pw"), ("dh", "dw")))
    axes = ("h",) if square else ("h", "w")
    s = f"g{p['g']}" if p["g"] != 1 else ""
    s += f"mb{p['mb']}ic{p['ic']}" + "".join(f"i{a}{p['i' + a]}" for a in axes)
    s += f"oc{p['oc']}" + "".join(f"k{a}{p['k' + a]}" for a in axes)
    s += "".join(f"s{a}{p['s' + a]}" for a in axes if p["s" + a] != 1)
    s += "".join(f"p{a}{p['p' + a]}" for a in axes if p["p" + a] != 0)
    s += "".join(f"d{a}{p['d' + a]}" for a in axes if p["d" + a] != 0)
    if p.get("dtype", "fp32") != "fp32":
        s += "dt" + p["dtype"]
    if p.get("layout", "nchw") != "nchw":
        s += p["layout"]
    return s


def v1_to_v2_descriptor(text):
    """A version-1 descriptor (with its n"name", if any) in version 2's canonical form."""
    p = parse_v1_descriptor(text)
    p["dh"] -= 1
    p["dw"] -= 1
    out = v2_descriptor(p)
    return out + f'n"{p["name"]}"' if p["name"] else out


def _upgrade_command(command):
    """`... --problem DESC ...` with DESC in version 2's form."""
    def repl(m):
        return m.group(1) + v1_to_v2_descriptor(m.group(2))
    return re.sub(r'(--problem[ =])(\S+)', repl, command)


def upgrade_result(r):
    """One result record of version 1, changed in place to version 2."""
    if isinstance(r.get("problem"), str) and r["problem"]:
        r["problem"] = v1_to_v2_descriptor(r["problem"])
    if isinstance(r.get("command"), str):
        r["command"] = _upgrade_command(r["command"])
    params = r.get("params")
    if isinstance(params, dict) and "dh" in params and "dilation_h" not in params:
        upgraded = {}
        for k, v in params.items():
            upgraded[k] = v - 1 if k in ("dh", "dw") and isinstance(v, int) else v
            if k == "dw":
                upgraded["dilation_h"] = params["dh"]
                upgraded["dilation_w"] = params["dw"]
        params.clear()
        params.update(upgraded)
    return r


def upgrade(doc):
    """A results document (results.json, a myconv --json file) upgraded in place to the current
    version; returns the version it had. Raises DescriptorError on a descriptor it cannot read."""
    version = doc.get("schema_version")
    if version == 1:
        for r in doc.get("results") or []:
            if isinstance(r, dict):
                upgrade_result(r)
        doc["schema_version"] = SCHEMA_VERSION
    return version
