/**
 * The status page's HTML and CSS. Everything the page needs comes from the
 * node itself (`/`, `/app.css`, `/app.js`, `/favicon.svg`, `/events`);
 * the Content-Security-Policy in {@linkcode PAGE_CSP} lets the browser load
 * nothing else.
 *
 * @module
 */

/** Allows same-origin scripts, styles and the event stream; nothing else. */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The page: its sections are filled in by `/app.js` from `/events`. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>zoo-node</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1>zoo-node</h1>
  <span id="self" class="mono"></span>
  <span id="conn" class="pill">connecting</span>
</header>
<main>
  <section id="cards" class="cards" aria-label="Summary"></section>
  <p id="waiting" class="banner" role="status" hidden></p>
  <section>
    <h2>Loss</h2>
    <svg id="loss-chart" viewBox="0 0 600 240" role="img" aria-label="Training loss per step and per round">
      <g id="axes"></g>
      <polyline id="step-line" points=""></polyline>
      <g id="round-markers"></g>
    </svg>
    <p class="legend"><span class="key step"></span>loss per inner step
      <span class="key val"></span>held-out loss per round
      <span class="key train"></span>round training loss</p>
  </section>
  <section id="earnings" hidden>
    <h2>Earnings</h2>
    <svg id="earnings-chart" viewBox="0 0 600 240" role="img" aria-label="What this node's seat earned per credited round"></svg>
    <p class="legend">wei earned per credited round at this node's bid, before the network fee</p>
  </section>
  <section>
    <h2>Peers <span id="peer-count" class="muted"></span></h2>
    <div class="scroll"><table id="peers">
      <thead><tr><th>peer</th><th>backend</th><th>tokens/s</th><th>last seen</th><th>round.step</th><th>contribution</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section>
    <h2>Chain commits</h2>
    <div class="scroll"><table id="commits">
      <thead><tr><th>round</th><th>checkpoint</th><th>transaction</th><th>leader</th><th>train loss</th><th>held-out</th><th>sent</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section>
    <h2>Audits <span id="audit-count" class="muted"></span></h2>
    <div class="scroll"><table id="audits">
      <thead><tr><th>round</th><th>peer</th><th>segment</th><th>verdict</th><th>loss before → after</th><th>time</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section>
    <h2>Traffic and drops</h2>
    <div class="scroll"><table id="traffic"><tbody></tbody></table></div>
  </section>
</main>
</body>
</html>
`;

/** The page's styles: one column on a phone, a grid of cards on a desk. */
export const PAGE_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fbfbfc; --muted: #6a737d;
  --line: #d8dde3; --card: #fff; --step: #3b82f6; --val: #e4572e; --train: #2a9d8f; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --bg: #14171b;
  --muted: #98a2ad; --line: #2c333b; --card: #1c2127; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: baseline;
  padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.2rem; margin: 0; }
#self { overflow-wrap: anywhere; min-width: 0; }
h2 { font-size: 1rem; margin: 1.25rem 0 .5rem; }
main { padding: 0 1rem 2rem; max-width: 1100px; }
.mono, td { font-family: ui-monospace, monospace; font-size: .85rem; }
.muted { color: var(--muted); font-weight: normal; }
.pill { border: 1px solid var(--line); border-radius: 1rem; padding: 0 .6rem; font-size: .8rem; }
.pill.live { border-color: var(--train); color: var(--train); }
.pill.down { border-color: var(--val); color: var(--val); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr));
  gap: .5rem; margin-top: 1rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .4rem; padding: .5rem .7rem; min-width: 0; }
.card .label { color: var(--muted); font-size: .75rem; text-transform: uppercase; letter-spacing: .03em; }
.card .value { font-size: 1.1rem; overflow-wrap: anywhere; }
.card .note { color: var(--muted); font-size: .75rem; overflow-wrap: anywhere; }
svg#loss-chart, svg#earnings-chart { width: 100%; height: auto; background: var(--card); border: 1px solid var(--line); border-radius: .4rem; }
rect.earning { fill: #22c55e; }
#step-line { fill: none; stroke: var(--step); stroke-width: 1.5; }
.round-marker.val { fill: var(--val); }
.round-marker.train { fill: var(--train); }
#axes line { stroke: var(--line); }
#axes text { fill: var(--muted); font-size: 11px; }
.legend { color: var(--muted); font-size: .8rem; }
.key { display: inline-block; width: .8rem; height: .8rem; margin: 0 .3rem 0 .8rem; border-radius: .2rem; vertical-align: -1px; }
.key.step { background: var(--step); } .key.val { background: var(--val); } .key.train { background: var(--train); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th { text-align: left; font-weight: 600; font-size: .75rem; color: var(--muted); }
th, td { padding: .3rem .5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
tr.self td:first-child::after { content: " (this node)"; color: var(--muted); }
tr.bad td { color: #c0392b; }
.banner { margin: .75rem 0 0; padding: .5rem .7rem; border: 1px solid var(--val);
  border-radius: .4rem; color: var(--val); overflow-wrap: anywhere; }
.banner[hidden] { display: none; }
`;

/** A small icon, so browsers do not ask for /favicon.ico. */
export const FAVICON_SVG =
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#3b82f6"/><path d="M4 5h8L4 11h8" stroke="#fff" stroke-width="1.6" fill="none"/></svg>`;
