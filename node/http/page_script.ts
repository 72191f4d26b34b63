/**
 * The status page's script, served as `/app.js`. It listens to `/events`
 * and redraws the cards, the loss chart and the tables on every frame;
 * text from the node goes in with `textContent` only, never as HTML.
 *
 * @module
 */
import { claimsLine, formatEther, formatTokens } from "./status_text.ts";

/**
 * The wording shared with `zoo-node status` and the browser peer's page
 * (./status_text.ts), as script: each function's own compiled source, so
 * the page cannot drift from the terminal.
 */
const STATUS_TEXT = Object.entries({ formatTokens, formatEther, claimsLine })
  .map(([name, fn]) => `var ${name} = ${fn.toString()};`)
  .join("\n  ");

/** Plain browser JavaScript (no modules, no dependencies). */
export const PAGE_SCRIPT = String.raw`"use strict";
(function () {
  var MAX_STEPS = 5000;
  var steps = [];
  var rounds = [];
  var svgNs = "http://www.w3.org/2000/svg";

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(svgNs, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function short(id) {
    if (!id) return "-";
    return id.length > 16 ? id.slice(0, 8) + "…" + id.slice(-6) : id;
  }
  // As node/format_bytes.ts prints them in the terminal.
  function bytes(n) {
    if (n < 1e3) return n + " B";
    if (n < 1e6) return (n / 1e3).toFixed(1) + " kB";
    if (n < 1e9) return (n / 1e6).toFixed(1) + " MB";
    return (n / 1e9).toFixed(2) + " GB";
  }
  function num(x, digits) {
    return x === null || x === undefined ? "-" : Number(x).toFixed(digits);
  }
  ${STATUS_TEXT}
  function tokens(n) {
    return n === null || n === undefined ? "-" : formatTokens(n);
  }
  function ether(wei) {
    return wei === null || wei === undefined ? "-" : formatEther(wei);
  }
  function fill(tbody, rows) {
    tbody.replaceChildren.apply(tbody, rows);
  }
  function row(cells, attrs) {
    var tr = el("tr");
    for (var k in attrs || {}) tr.setAttribute(k, attrs[k]);
    cells.forEach(function (c) {
      var td = el("td", c.text === undefined ? c : c.text);
      if (c.title) td.title = c.title;
      tr.appendChild(td);
    });
    return tr;
  }
  function card(label, value, title, note) {
    var d = el("div", null, "card");
    d.appendChild(el("div", label, "label"));
    var v = el("div", value, "value");
    if (title) v.title = title;
    d.appendChild(v);
    if (note) d.appendChild(el("div", note, "note"));
    return d;
  }

  function renderCards(f) {
    var s = f.status, t = s.training, c = f.contributions;
    var sent = s.bytes.gossip.sent + s.bytes.blob.sent;
    var received = s.bytes.gossip.received + s.bytes.blob.received;
    $("cards").replaceChildren(
      card("job", t ? short(t.job) : "none", t ? t.job : ""),
      card("round", t ? t.round + " / " + t.rounds : "-"),
      card("phase", t ? t.phase : "-"),
      card("leader", t ? short(t.leader) : "-", t && t.leader ? t.leader : ""),
      card("live peers", s.livePeers),
      card("tokens/s", num(s.progress.throughput, 0)),
      card("backend", s.progress.backend, s.progress.device,
        t ? "needs about " + bytes(t.memory.peerBytes) + "; " +
          t.memory.what + " " + bytes(t.memory.needBytes) + " of " +
          bytes(t.memory.limitBytes) + " (" + t.memory.limit + ")" : ""),
      card("sent", bytes(sent)),
      card("received", bytes(received)),
      card("contribution", c ? tokens(c.contribution) + " tokens" : "-", "",
        c ? "in " + c.contributedRounds.length + " round(s) of " +
          c.roundsCommitted + "; " + tokens(c.totalContribution) + " in all" : ""),
      card("claimable", c ? ether(c.claimable) : "-",
        c ? c.claimable + " wei" : "", c ? claimsLine(c, Date.now()) : ""),
      deterrenceCard(f.deterrence),
    );
    if (c && c.seat) seatCards(c.seat).forEach(function (d) { $("cards").appendChild(d); });
  }
  // A priced job's seat: the bid and class, then what it earned.
  function seatCards(seat) {
    return [
      card("seat", (Number(seat.price) / 1e9) + " gwei a token",
        seat.price + " wei per verified token",
        seat.stage + (seat.capabilityClass > 0 ? ", class " + seat.capabilityClass +
          " (" + seat.tokensPerSecond + " tokens/s)" : "")),
      card("earned", ether(seat.net), "after the network fee of " + ether(seat.fee),
        seat.roundsCredited + " round(s), " + tokens(seat.tokens) + " tokens; paid " +
          ether(seat.paid) + ", claimable " + ether(seat.claimable) +
          (seat.slashed !== "0" ? ", slashed " + ether(seat.slashed) : "")),
    ];
  }
  // What each credited round earned at the bid, as bars.
  function renderEarnings(f) {
    var c = f.contributions, seat = c && c.seat, box = $("earnings");
    box.hidden = !seat;
    if (!seat) return;
    var chart = $("earnings-chart"), rounds = seat.rounds;
    var top = Math.max.apply(null, rounds.map(function (r) { return Number(r.earned); }).concat([1]));
    var w = 600 / Math.max(rounds.length, 1);
    chart.replaceChildren.apply(chart, rounds.map(function (r, i) {
      var h = 200 * Number(r.earned) / top;
      var bar = svg("rect", { x: i * w + 2, y: 220 - h, width: Math.max(w - 4, 1), height: h, "class": "earning" });
      var tip = svg("title", {});
      tip.textContent = "round " + r.round + ": " + ether(r.earned) + " for " + tokens(r.tokens) + " tokens";
      bar.appendChild(tip);
      return bar;
    }));
  }
  // What cheating a round risks against what it pays (zoo_job's deterrence).
  function deterrenceCard(d) {
    if (!d) return card("deterrence", "-");
    return card("deterrence",
      d.ratio === null ? "no pay to gain" : num(d.ratio, 1) + "x",
      "P(caught) x slash / a round's pay; the job asks at least " + d.floor + "x",
      "audit rate " + d.rate + ": risks " + ether(d.expectedLoss) + " vs " +
        ether(d.rewardPerRound) + " a round");
  }

  // A round stalled for members, worded as protocol/round/round_state.ts's
  // waitingLine words it; peer ids shortened, in full in the title.
  function renderWaiting(f) {
    var t = f.status.training, w = t && t.waiting, banner = $("waiting");
    banner.hidden = !w;
    if (!w) return;
    var left = w.left.map(function (d) {
      return short(d.peer) + " " + (d.why || "(why not read yet)");
    });
    banner.textContent = "round " + t.round + ": waiting for members: " +
      w.live + " of the " + w.needed + " the job needs " +
      (w.live === 1 ? "is" : "are") + " live" +
      (left.length > 0 ? " (left: " + left.join("; ") + ")" : "");
    banner.title = w.left.map(function (d) { return d.peer; }).join("\n");
  }

  function renderPeers(f) {
    var s = f.status;
    var me = row([
      { text: short(s.peerId), title: s.peerId },
      { text: s.progress.backend + (s.progress.capabilityClass ? ", class " + s.progress.capabilityClass : ""),
        title: s.progress.device },
      num(s.progress.throughput, 0),
      "now",
      s.progress.round + "." + s.progress.step,
      f.contributions ? tokens(f.contributions.contribution) : "-",
    ], { "data-peer": s.peerId, "class": "self" });
    var others = f.peers.map(function (p) {
      return row([
        { text: short(p.peerId), title: p.peerId },
        { text: (p.backend || "-") + (p.capabilityClass ? ", class " + p.capabilityClass : ""),
          title: p.device || "" },
        num(p.throughput, 0),
        p.lastSeenMs === null ? (p.connected ? "connected" : "-")
          : (p.lastSeenMs / 1000).toFixed(1) + " s ago",
        p.round === null ? "-" : p.round + "." + p.step,
        tokens(p.contribution),
      ], { "data-peer": p.peerId });
    });
    fill($("peers").tBodies[0], [me].concat(others));
    $("peer-count").textContent = "(" + (others.length + 1) + ")";
  }

  function renderCommits() {
    var recent = rounds.slice(-50).reverse();
    fill($("commits").tBodies[0], recent.map(function (r) {
      return row([
        r.round,
        { text: short(r.checkpoint), title: r.checkpoint },
        { text: short(r.tx), title: r.tx || "" },
        { text: short(r.leader), title: r.leader || "" },
        num(r.trainLoss, 3),
        num(r.valLoss, 3),
        bytes(r.bytesSent),
      ], { "data-round": String(r.round) });
    }));
  }

  // This node's latest audits of other peers' work, newest first, then
  // the slashings its evidence brought about.
  function renderAudits(f) {
    var t = f.status.training;
    if (!t) return;
    $("audit-count").textContent = "(" + t.auditCounts.passed + " passed, " +
      t.auditCounts.failed + " failed)";
    var audits = t.audits.slice(-50).reverse().map(function (a) {
      return row([
        a.round,
        { text: short(a.peer), title: a.peer },
        a.segment,
        a.passed
          ? (a.exact ? "passed, bit for bit" : "passed, within tolerance")
          : "FAILED: " + a.check,
        a.loss ? num(a.loss.before, 3) + " → " + num(a.loss.after, 3) : "-",
        a.ms + " ms",
      ], { "data-audit": a.round + "/" + a.peer, "class": a.passed ? "" : "bad" });
    });
    var slashes = t.slashes.map(function (s) {
      return row([
        s.round,
        { text: short(s.account), title: s.account },
        "-",
        "slashed (evidence kind " + s.kind + ")",
        { text: short(s.tx), title: s.tx },
        "",
      ], { "class": "bad" });
    });
    var lost = t.lost.map(function (l) {
      return row([
        l.round,
        "this node",
        "-",
        "work lost: " + tokens(l.tokens) + " tokens of credit given back",
        { text: short(l.tx), title: l.tx },
        "",
      ], { "class": "bad", "data-lost": String(l.round) });
    });
    fill($("audits").tBodies[0], lost.concat(slashes, audits));
  }

  function renderTraffic(f) {
    var s = f.status, rows = [
      ["gossip sent / received", bytes(s.bytes.gossip.sent) + " / " + bytes(s.bytes.gossip.received)],
      ["blobs sent / received", bytes(s.bytes.blob.sent) + " / " + bytes(s.bytes.blob.received)],
      ["blob transfers served / fetched", s.blobs.served + " / " + s.blobs.fetched],
    ];
    for (var reason in s.drops) {
      if (s.drops[reason] > 0) rows.push(["dropped: " + reason, s.drops[reason]]);
    }
    fill($("traffic").tBodies[0], rows.map(function (r) { return row(r); }));
  }

  // x: global step (round × H + step); y: loss, on a 600 × 240 canvas.
  function renderChart(f) {
    var t = f.status.training;
    var H = t ? t.innerSteps : 1;
    var pts = steps.map(function (s) { return [s.round * H + s.step, s.loss]; });
    var marks = [];
    rounds.forEach(function (r) {
      var x = (r.round + 1) * H;
      marks.push([x, r.valLoss, "val"]);
      if (r.trainLoss !== null) marks.push([x, r.trainLoss, "train"]);
    });
    var all = pts.concat(marks);
    var axes = $("axes");
    if (all.length === 0) {
      $("step-line").setAttribute("points", "");
      $("round-markers").replaceChildren();
      axes.replaceChildren(svg("text", { x: 300, y: 120, "text-anchor": "middle" }));
      axes.firstChild.textContent = "no training steps yet";
      return;
    }
    var xs = all.map(function (p) { return p[0]; });
    var ys = all.map(function (p) { return p[1]; });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { y1 += 0.5; y0 -= 0.5; }
    var L = 44, R = 590, T = 10, B = 220;
    function px(x) { return (L + (x - x0) / (x1 - x0) * (R - L)).toFixed(1); }
    function py(y) { return (B - (y - y0) / (y1 - y0) * (B - T)).toFixed(1); }
    $("step-line").setAttribute("points", pts.map(function (p) {
      return px(p[0]) + "," + py(p[1]);
    }).join(" "));
    $("round-markers").replaceChildren.apply($("round-markers"), marks.map(function (m) {
      return svg("circle", { cx: px(m[0]), cy: py(m[1]), r: 4, "class": "round-marker " + m[2] });
    }));
    var labels = [
      [L - 4, T + 4, y1.toFixed(2), "end"], [L - 4, B, y0.toFixed(2), "end"],
      [L, 236, "step " + x0, "start"], [R, 236, "step " + x1, "end"],
    ];
    axes.replaceChildren.apply(axes, [
      svg("line", { x1: L, y1: T, x2: L, y2: B }),
      svg("line", { x1: L, y1: B, x2: R, y2: B }),
    ].concat(labels.map(function (l) {
      var e = svg("text", { x: l[0], y: l[1], "text-anchor": l[3] });
      e.textContent = l[2];
      return e;
    })));
  }

  function onFrame(f) {
    if (f.full) { steps = []; rounds = []; }
    steps = steps.concat(f.steps);
    if (steps.length > MAX_STEPS) steps = steps.slice(-MAX_STEPS);
    rounds = rounds.slice(0, f.roundsFrom).concat(f.rounds);
    $("self").textContent = f.status.peerId + " · v" + f.status.version +
      " · up " + f.status.uptimeSeconds + " s";
    renderCards(f);
    renderEarnings(f);
    renderWaiting(f);
    renderChart(f);
    renderPeers(f);
    renderCommits();
    renderAudits(f);
    renderTraffic(f);
  }

  var events = new EventSource("/events");
  events.addEventListener("status", function (e) {
    $("conn").textContent = "live";
    $("conn").className = "pill live";
    onFrame(JSON.parse(e.data));
  });
  events.onerror = function () {
    $("conn").textContent = "reconnecting";
    $("conn").className = "pill down";
  };
})();
`;
