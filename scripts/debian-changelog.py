#!/usr/bin/env python3
"""Writes the Debian changelog (changelog.Debian) from CHANGELOG.md, so the package's history is
the project's own, with no placeholders:

    scripts/debian-changelog.py VERSION "MAINTAINER <EMAIL>" < CHANGELOG.md

One entry per released section (`## X.Y.Z — YYYY-MM-DD`), newest first; the newest entry takes
the package VERSION (e.g. 0.1.0-1), the others X.Y.Z-1. `Unreleased` is left out. Bullets become
`  * ` items wrapped at 79 columns; Markdown emphasis is dropped.
"""
import email.utils, re, sys, textwrap, datetime

version, maintainer = sys.argv[1], sys.argv[2]
sections, current = [], None
for line in sys.stdin.read().splitlines():
    heading = re.match(r"^## (\d+\.\d+\.\d+) \S+ (\d{4}-\d{2}-\d{2})\s*$", line)
    if heading:
        current = {"version": heading.group(1), "date": heading.group(2), "items": []}
        sections.append(current)
    elif line.startswith("## "):
        current = None
    elif current is not None:
        if line.startswith("- "):
            current["items"].append(line[2:].strip())
        elif line.startswith("  ") and current["items"]:
            current["items"][-1] += " " + line.strip()
        elif line.strip() and not current["items"]:
            current.setdefault("intro", []).append(line.strip())
if not sections:
    sys.exit("debian-changelog: no released section (## X.Y.Z — YYYY-MM-DD) in CHANGELOG.md")

out = []
for index, section in enumerate(sections):
    entry_version = version if index == 0 else section["version"] + "-1"
    out.append(f"kbtd ({entry_version}) unstable; urgency=medium")
    out.append("")
    items = section["items"] or [" ".join(section.get("intro", ["Release " + section["version"] + "."]))]
    for item in items:
        text = re.sub(r"\*\*([^*]+)\*\*", r"\1", item)
        wrapped = textwrap.wrap(text, width=79, initial_indent="  * ", subsequent_indent="    ",
                                break_long_words=False, break_on_hyphens=False)
        out.extend(wrapped)
    out.append("")
    day = datetime.datetime.strptime(section["date"], "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
    out.append(f" -- {maintainer}  {email.utils.format_datetime(day)}")
    out.append("")
sys.stdout.write("\n".join(out))
