"""The finance summary of a `kvplan size --demand --report` page as a person sees it in a
1,400 px window (headless Chromium over the DevTools pipe, tests/devtools.py): it is the
first section, nothing on the page reaches past the window (a wide table scrolls in its
own box, never the page), and
its tornado chart draws one bar per row of the sensitivity table. Keeps a screenshot of
the section. Installs nothing: without chromium it exits 77 (skipped).
Usage: finance_layout.py REPORT.html SCREENSHOT.png
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from devtools import fail, report_page, save_section  # noqa: E402  (tests/devtools.py)

REPORT, SHOT = sys.argv[1], sys.argv[2]
WIDTH = 1400

# The sections in page order; every element wider than the window or reaching past it;
# the bars of the finance section's tornado (its segments grouped by row: a bar is one
# or two rectangles at one height) and the rows of the sensitivity table.
MEASURE = """(() => {
  const sections = [...document.querySelectorAll('h2')].map(h => h.id || h.textContent);
  // Inside a box that scrolls sideways (class "scroll") a wide table stays in the window.
  const wide = [...document.body.querySelectorAll('*')]
    .filter(e => !e.closest('.scroll'))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > window.innerWidth + 0.5; })
    .slice(0, 5).map(e => e.tagName + ' ' + (e.id || e.className || '') + ' ' + Math.round(e.getBoundingClientRect().right));
  const finance = document.getElementById('finance');
  let tornado = null;
  for (let e = finance && finance.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
    const s = e.querySelector('svg[aria-label^="What moves the total"]');
    if (s) { tornado = s; break; }
  }
  const bars = tornado ? new Set([...tornado.querySelectorAll('rect')].filter(r => r.querySelector('title'))
                                  .map(r => r.getAttribute('y'))).size : -1;
  const h3 = [...document.querySelectorAll('h3')].find(e => e.textContent === 'Sensitivity of the total');
  let table = null;
  for (let e = h3 && h3.nextElementSibling; e && !table; e = e.nextElementSibling)
    table = e.tagName === 'TABLE' ? e : e.querySelector('table');
  return {sections, wide, bars, rows: table ? table.rows.length - 1 : -1,
          page_width: document.documentElement.scrollWidth, width: window.innerWidth};
})()"""


def main():
    with report_page(REPORT, "finance", WIDTH, 1100) as page:
        m = page.js(MEASURE)
        if m["width"] != WIDTH:
            fail(f"the window is {m['width']} px wide, not {WIDTH}")
        if not m["sections"] or m["sections"][0] != "finance":
            fail(f"the finance summary is not the first section: {m['sections'][:4]}")
        if m["page_width"] > WIDTH or m["wide"]:
            fail(f"the page is {m['page_width']} px wide in a {WIDTH} px window; too wide: {m['wide']}")
        if m["rows"] < 1:
            fail("no sensitivity table under 'Sensitivity of the total'")
        if m["bars"] != m["rows"]:
            fail(f"the finance section's tornado draws {m['bars']} bars for {m['rows']} sensitivity rows")
        save_section(page, "finance", WIDTH, 1100, SHOT)
        if page.console:
            fail(f"the page logged errors: {page.console}")
        print(json.dumps({"first_section": m["sections"][0], "page_width_px": m["page_width"],
                          "tornado_bars": m["bars"], "sensitivity_rows": m["rows"]}))
    print("finance_layout: PASS")


if __name__ == "__main__":
    main()
