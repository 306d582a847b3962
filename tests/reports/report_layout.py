"""The Buy table of a `kvplan size --buy --report` page as a person sees it in a 1,400 px
window (headless Chromium over the DevTools pipe, tests/devtools.py): the columns a buyer
decides on (TCO, $ per million output tokens, break-even, capex, opex) are on screen without
scrolling the table, and the rank column counts 1, 2, 3, ... down the rows. Keeps a
screenshot of the Buy section. Installs nothing: without chromium it exits 77 (skipped).
Usage: report_layout.py REPORT.html SCREENSHOT.png
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from devtools import fail, report_page, save_section  # noqa: E402  (tests/devtools.py)

REPORT, SHOT = sys.argv[1], sys.argv[2]
WIDTH = 1400
DECISION = ["TCO", "$ / M output tok", "break-even vs rent", "capex", "opex / year"]

# Each header of the bill of materials: its text and where it lies against the table's
# scrolling box and the window (CSS pixels); and the rank column's cells.
MEASURE = """(() => {
  const h3 = [...document.querySelectorAll('h3')].find(e => e.textContent === 'Bill of materials');
  if (!h3) return null;
  const box = h3.nextElementSibling, table = box.querySelector('table');
  const frame = box.getBoundingClientRect();
  const heads = [...table.rows[0].cells].map(c => {
    const r = c.getBoundingClientRect();
    return {text: c.textContent, left: r.left, right: r.right};
  });
  const ranks = [...table.rows].slice(1).map(r => r.cells[0].textContent);
  return {heads, ranks, box_left: frame.left, box_right: Math.min(frame.right, window.innerWidth),
          scroll_width: table.scrollWidth, width: window.innerWidth};
})()"""


def main():
    with report_page(REPORT, "buy", WIDTH, 1100) as page:
        m = page.js(MEASURE)
        if not m:
            fail("the report has no 'Bill of materials' table")
        if m["width"] != WIDTH:
            fail(f"the window is {m['width']} px wide, not {WIDTH}")
        for want in DECISION:
            head = next((h for h in m["heads"] if h["text"].startswith(want)), None)
            if head is None:
                fail(f"no '{want}' column in the bill of materials: {[h['text'] for h in m['heads']]}")
            if head["left"] < m["box_left"] - 0.5 or head["right"] > m["box_right"] + 0.5:
                fail(f"the '{head['text']}' column spans {head['left']:.0f}-{head['right']:.0f} px: outside the "
                     f"{m['box_left']:.0f}-{m['box_right']:.0f} px a {WIDTH} px window shows without scrolling")
        want_ranks = [str(i + 1) for i in range(len(m["ranks"]))]
        if m["ranks"] != want_ranks:
            fail(f"the rank column reads {m['ranks']}, expected {want_ranks}")
        save_section(page, "buy", WIDTH, 900, SHOT)
        if page.console:
            fail(f"the page logged errors: {page.console}")
        print(json.dumps({"columns_on_screen": DECISION, "rows": len(m["ranks"]),
                          "table_width_px": m["scroll_width"]}))
    print("report_layout: PASS")


main()
