"""report.md as a self-contained page (index.html beside it): the Markdown our reports use
(headings, paragraphs, pipe tables, lists, images, `code`, **bold**, *italic*, links, fenced code)
turned into HTML with a small style sheet inline. Images keep their relative paths (plots/*.png),
so the run folder opens in any browser without a network; nothing else is fetched.
"""

import html
import re

STYLE = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;line-height:1.45}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}code{background:#f4f4f4;padding:0 .2em}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto}img{max-width:100%;border:1px solid #ddd}"""

_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)"),
     lambda m: f'<img src="{m.group(2)}" alt="{m.group(1).replace(chr(34), "&quot;")}">'),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>'),
    (re.compile(r"\*\*([^*]+)\*\*"), lambda m: f"<strong>{m.group(1)}</strong>"),
    (re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])"), lambda m: f"<em>{m.group(1)}</em>"),
]


def inline(text):
    """One line of Markdown text as HTML: code spans first (their text is taken as it is)."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if len(part) >= 2 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{html.escape(part[1:-1], quote=False)}</code>")
            continue
        part = html.escape(part, quote=False)
        for pattern, repl in _INLINE:
            part = pattern.sub(repl, part)
        out.append(part)
    return "".join(out)


def table_cells(line):
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [inline(c.strip().replace("\\|", "|")) for c in cells]


def to_html(markdown):
    """The body HTML of a Markdown text."""
    lines = markdown.splitlines()
    out, i = [], 0
    para = []

    def flush():
        if para:
            out.append("<p>" + " ".join(inline(p) for p in para) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:j]), quote=False)
                       + "</code></pre>")
            i = j + 1
            continue
        m = re.match(r"^(#{1,6}) (.*)$", line)
        if m:
            flush()
            n = len(m.group(1))
            out.append(f"<h{n}>{inline(m.group(2))}</h{n}>")
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|( *:?-+:? *\|)+ *$",
                                                                      lines[i + 1]):
            flush()
            out.append("<table><thead><tr>" + "".join(f"<th>{c}</th>"
                                                     for c in table_cells(line))
                       + "</tr></thead><tbody>")
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                out.append("<tr>" + "".join(f"<td>{c}</td>" for c in table_cells(lines[i]))
                           + "</tr>")
                i += 1
            out.append("</tbody></table>")
            continue
        elif re.match(r"^\s*[-*] ", line):
            flush()
            out.append("<ul>")
            while i < len(lines) and re.match(r"^\s*[-*] ", lines[i]):
                item = [re.sub(r"^\s*[-*] ", "", lines[i])]
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and \
                        not re.match(r"^\s*[-*] ", lines[i]):
                    item.append(lines[i].strip())
                    i += 1
                out.append("<li>" + " ".join(inline(t) for t in item) + "</li>")
            out.append("</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out)


def report_page(markdown):
    """The whole page: the report's first heading as its title, the body, the style inline."""
    m = re.search(r"^# (.*)$", markdown, re.M)
    title = html.escape(m.group(1) if m else "report", quote=False)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title><style>{STYLE}</style></head><body>\n"
            + to_html(markdown) + "\n</body></html>\n")
