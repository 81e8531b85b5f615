"""The shop's stylesheet, inlined into every page's <head> (fixture_site/pages.py).

Inline, not a <link rel="stylesheet">: a browser crawling the shop would fetch a linked stylesheet after
every page, a request the strace-counted request points (harness/faults/store_writes.py) cannot tell from
the crawl's own. A real shop's CSS is larger still; this is enough for the pages to look like one.
"""

STYLESHEET = """
:root { --ink: #1d232b; --muted: #5b6673; --line: #dde3ea; --paper: #ffffff; --wash: #f5f7f9;
  --accent: #1f6f5c; --accent-dark: #17584a; --warn: #a5442a; --radius: 6px;
  --font: "Inter", "Noto Sans", "Noto Sans KR", "Helvetica Neue", Arial, sans-serif; }
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { margin: 0; font-family: var(--font); font-size: 16px; line-height: 1.55; color: var(--ink);
  background: var(--wash); }
a { color: var(--accent); text-decoration: none; }
a:hover, a:focus { color: var(--accent-dark); text-decoration: underline; }
img { max-width: 100%; height: auto; display: block; }
h1, h2, h3 { line-height: 1.2; margin: 0 0 .6em; font-weight: 650; }
h1 { font-size: 2rem; } h2 { font-size: 1.4rem; } h3 { font-size: 1.1rem; }
p { margin: 0 0 1em; }
.skip-link { position: absolute; left: -9999px; top: 0; padding: .5em 1em; background: var(--paper); }
.skip-link:focus { left: 1em; z-index: 10; }
.announcement { background: var(--ink); color: #fff; text-align: center; font-size: .85rem; padding: .45em 1em; }
.site-header { background: var(--paper); border-bottom: 1px solid var(--line); }
.site-header .inner { max-width: 1200px; margin: 0 auto; padding: 1em 1.5em; display: flex;
  align-items: center; justify-content: space-between; gap: 2em; flex-wrap: wrap; }
.brand { font-size: 1.35rem; font-weight: 700; letter-spacing: -.01em; color: var(--ink); }
.brand small { display: block; font-size: .75rem; font-weight: 400; color: var(--muted); letter-spacing: 0; }
.site-nav { display: flex; gap: 1.4em; font-size: .95rem; }
.site-nav a { color: var(--ink); padding: .3em 0; border-bottom: 2px solid transparent; }
.site-nav a:hover { border-bottom-color: var(--accent); text-decoration: none; }
.account { display: flex; gap: 1em; font-size: .9rem; color: var(--muted); }
.breadcrumbs { max-width: 1200px; margin: 0 auto; padding: .9em 1.5em 0; font-size: .85rem; color: var(--muted); }
.breadcrumbs ol { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .4em; }
.breadcrumbs li + li::before { content: "/"; margin-right: .4em; color: var(--line); }
.breadcrumbs [aria-current] { color: var(--ink); }
main { max-width: 1200px; margin: 0 auto; padding: 1.5em; }
.page-intro { max-width: 60ch; color: var(--muted); }
.results-count { font-size: .9rem; color: var(--muted); margin-bottom: 1em; }
main ul { list-style: none; margin: 0 0 1.5em; padding: 0; display: grid; gap: 1em;
  grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); }
main ul li { background: var(--paper); border: 1px solid var(--line); border-radius: var(--radius);
  padding: 1.1em 1.2em; min-height: 5.5em; }
main ul li a { font-weight: 600; color: var(--ink); }
main ul li a::after { content: " \\2192"; color: var(--accent); }
a.next { display: inline-block; margin: .5em 0 2em; padding: .65em 1.6em; background: var(--accent);
  color: #fff; border-radius: var(--radius); font-weight: 600; }
a.next:hover { background: var(--accent-dark); text-decoration: none; }
.pager { font-size: .9rem; color: var(--muted); }
.product { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 2.5em;
  background: var(--paper); border: 1px solid var(--line); border-radius: var(--radius); padding: 2em; }
.product h1 { font-size: 2.1rem; }
.product .sku { display: inline-block; font-size: .85rem; color: var(--muted); letter-spacing: .04em;
  margin-right: 1em; }
.product .price { font-size: 1.6rem; font-weight: 700; color: var(--ink); }
.product .photo { width: 100%; aspect-ratio: 1 / 1; object-fit: cover; background: var(--wash);
  border-radius: var(--radius); margin-top: 1.2em; }
.price-note { font-size: .85rem; color: var(--muted); margin: .3em 0 1.2em; }
.rating { color: #b7791f; font-size: .95rem; margin: .2em 0 1em; }
.stock { color: var(--accent); font-weight: 600; }
.buy-box { border-top: 1px solid var(--line); margin-top: 1.4em; padding-top: 1.2em; }
.buy-box p { font-size: .92rem; color: var(--muted); }
.description { max-width: 72ch; }
.features { list-style: disc; padding-left: 1.2em; margin: 0 0 1.5em; }
.features li { margin: .25em 0; }
.specs { border-collapse: collapse; width: 100%; max-width: 640px; margin: 0 0 2em; font-size: .95rem; }
.specs th, .specs td { text-align: left; padding: .55em .8em; border-bottom: 1px solid var(--line);
  vertical-align: top; }
.specs th { width: 38%; color: var(--muted); font-weight: 500; }
.details { margin-top: 2.5em; background: var(--paper); border: 1px solid var(--line);
  border-radius: var(--radius); padding: 2em; }
.shop-notes { margin-top: 2.5em; color: var(--muted); font-size: .92rem; max-width: 80ch; }
.departments { max-width: 1200px; margin: 0 auto; padding: .2em 1.5em .9em; display: flex; flex-wrap: wrap;
  gap: .4em 1.6em; font-size: .88rem; color: var(--muted); }
.department { white-space: nowrap; }
.filters { float: left; width: 240px; margin: 0 2em 2em 0; background: var(--paper); border: 1px solid var(--line);
  border-radius: var(--radius); padding: 1.2em; font-size: .9rem; }
.filters h2 { font-size: 1rem; }
.filters fieldset { border: 0; margin: 0 0 1em; padding: 0; }
.filters legend { font-weight: 600; margin-bottom: .3em; }
.filters label { display: block; color: var(--muted); padding: .1em 0; }
.filters + ul, .filters ~ .pager, .filters ~ a.next { margin-left: calc(240px + 2em); }
.reviews .review { border-bottom: 1px solid var(--line); padding: 1em 0; }
.reviews .review:last-child { border-bottom: 0; }
.review h3 { font-size: 1rem; margin-bottom: .2em; }
.review-date { font-size: .8rem; color: var(--muted); margin-bottom: .5em; }
.questions dt { font-weight: 600; margin-top: 1em; }
.questions dd { margin: .3em 0 0; color: var(--muted); }
.site-footer { background: var(--ink); color: #d6dce3; margin-top: 3em; font-size: .9rem; }
.site-footer .inner { max-width: 1200px; margin: 0 auto; padding: 2.5em 1.5em; display: grid; gap: 2em;
  grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); }
.site-footer h2 { font-size: 1rem; color: #fff; text-transform: uppercase; letter-spacing: .06em; }
.site-footer a { color: #fff; }
.site-footer .legal { max-width: 1200px; margin: 0 auto; padding: 1em 1.5em 2em; color: #98a3b0;
  border-top: 1px solid #33404d; font-size: .8rem; }
@media (max-width: 760px) {
  .product { grid-template-columns: 1fr; padding: 1.2em; }
  .site-nav { order: 3; width: 100%; overflow-x: auto; }
  .filters { float: none; width: auto; margin: 0 0 1.5em; }
  .filters + ul, .filters ~ .pager, .filters ~ a.next { margin-left: 0; }
  .departments { display: none; }
  h1 { font-size: 1.6rem; }
  main { padding: 1em; }
}
@media print {
  .announcement, .site-nav, .account, .site-footer, a.next { display: none; }
  body { background: #fff; }
}
""".strip()
