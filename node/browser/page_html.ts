/**
 * The browser peer's page. Plain HTML and CSS: the script (`page.js`)
 * fills the fields by id and sets `body[data-state]`. Nothing inline, so
 * the page's Content-Security-Policy can allow only its own files.
 *
 * @module
 */

/** `peer.css` of the browser peer. */
export const PEER_PAGE_CSS =
  `body { font: 14px/1.4 system-ui, sans-serif; margin: 1rem; max-width: 60rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dt { color: #555; }
dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
#fund:not(:empty) { background: #fff3cd; padding: .5rem; }
#error:not(:empty) { background: #f8d7da; padding: .5rem; }
#log { font-family: ui-monospace, monospace; font-size: 12px; max-height: 24rem; overflow: auto; }
`;

/** `index.html` of the browser peer. */
export const PEER_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>zoo-node browser peer</title>
<link rel="stylesheet" href="peer.css">
</head>
<body data-state="loading">
<h1>zoo-node browser peer</h1>
<p>This tab trains its share of a zoo-node job in a worker, with WebGPU where the browser offers a GPU adapter, else with WebAssembly kernels (the backend below says which). Its keys stay in this browser's storage.</p>
<p id="fund"></p>
<p id="error"></p>
<dl>
<dt>state</dt><dd id="state">loading</dd>
<dt>job</dt><dd id="job">-</dd>
<dt>peer id</dt><dd id="peer-id">-</dd>
<dt>account</dt><dd id="address">-</dd>
<dt>addresses</dt><dd id="addresses">none</dd>
<dt>connections</dt><dd id="connections">0</dd>
<dt>live peers</dt><dd id="live">0</dd>
<dt>round</dt><dd id="round">-</dd>
<dt>stage</dt><dd id="stage">-</dd>
<dt>step</dt><dd id="step">-</dd>
<dt>backend</dt><dd id="backend">-</dd>
<dt>stake</dt><dd id="stake">-</dd>
<dt>credited</dt><dd id="credited">-</dd>
<dt>claimable</dt><dd id="claimable">-</dd>
</dl>
<h2>Log</h2>
<ol id="log"></ol>
<script type="module" src="page.js"></script>
</body>
</html>
`;
