"""Write chalicelib/domain/scripts.py: Unicode's Script_Extensions, compact.

    python scripts/script_table.py            (rewrites the module)

Python's unicodedata has no Script property; names.py's mixed-script rule
(Unicode TR 39, section 5.1) needs each character's Script_Extensions. They
come from unicodedataplus (pinned in requirements-dev.txt): the service ships
the table, not the package. The module's own docstring (module_text) says
its format; tests/unit/test_names.py checks that it is what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

MODULE = Path(__file__).resolve().parents[1] / "chalicelib" / "domain" / "scripts.py"
EVERY_SCRIPT = ("Zyyy", "Zinh")
WIDTH = 92


def entries() -> list[str]:
    """The table's entries, one per run of code points that share their scripts."""
    import unicodedataplus

    table: list[str] = []
    last = None
    for code in range(sys.maxunicode + 1):
        # Unassigned (Zzzz) joins the run before it: Unicode never unassigns a code point, so
        # one unassigned here is unassigned in the older Unicode Python's unicodedata knows.
        if 0xD800 <= code <= 0xDFFF or unicodedataplus.script(chr(code)) == "Unknown":
            continue
        found = sorted(unicodedataplus.script_extensions(chr(code)))
        scripts = "*" if set(found) <= set(EVERY_SCRIPT) else "+".join(found)
        if scripts != last:
            table.append(f"{code:X}:{scripts}")
            last = scripts
    return table


def module_text() -> str:
    import unicodedataplus

    version = unicodedataplus.unidata_version
    # Cut anywhere: names.py joins the lines back before it splits the entries.
    text = " ".join(entries())
    lines = [text[at : at + WIDTH] for at in range(0, len(text), WIDTH)]
    body = "\n".join(f'    "{line}"' for line in lines)
    return f'''"""Unicode {version}'s Script_Extensions, compact: what names.py's mixed-script
rule reads. Written by scripts/script_table.py from unicodedataplus (Unicode's
Scripts.txt and ScriptExtensions.txt); tests/unit/test_names.py checks that it
is what that script writes. Do not edit by hand.

RANGES holds "START:SCRIPTS" entries separated by spaces: START (hex) is the
first code point of a run that ends where the next begins, SCRIPTS its script
extensions (ISO 15924 codes joined by "+"), or "*" for Common and Inherited,
which go with every script. Unassigned code points are in the run before them:
names.py refuses them before it reads this.
"""

UNICODE_VERSION = "{version}"
RANGES = (
{body}
)
'''


def main() -> int:
    MODULE.write_text(module_text(), encoding="utf-8")
    print(f"wrote {MODULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
