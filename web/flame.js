// SPDX-License-Identifier: MIT
// pyprofd's flame graph view, shared by the HTML report and the agent's page:
// d3-flame-graph draws the call tree (pprof/flamegraph.h's JSON: n name,
// f file, ln line, v samples, c children); this adds the hover details,
// a search that matches names and files as plain text, and the table of
// the hottest functions.
(function () {
  'use strict';

  function share(v, total) {
    const x = total > 0 ? (100 * v) / total : 0;
    return (x >= 10 ? x.toFixed(1) : x.toFixed(2)) + '%';
  }

  function where(data) {
    return data.f ? data.f + ':' + data.ln : '';
  }

  // What hovering a frame shows: full name, file:line, samples and share.
  function label(d, total) {
    const w = where(d.data);
    return d.data.n + (w ? '  ' + w : '') + '  \u2014  ' + d.value + ' samples, ' +
      share(d.value, total);
  }

  function matches(data, term) {
    if (!term) return false;
    term = term.toLowerCase();
    return data.n.toLowerCase().includes(term) ||
      (data.f !== undefined && data.f.toLowerCase().includes(term));
  }

  // Own and total samples per function (name and file). A function's total
  // counts each stack once, even when it recurses.
  function topFunctions(tree, skipDepth) {
    const byKey = new Map();
    const onPath = new Map();
    const stack = [{node: tree, depth: 0, enter: true}];
    while (stack.length) {
      const it = stack.pop();
      const node = it.node;
      const key = node.n + '\u0000' + (node.f || '');
      if (!it.enter) {
        const k = onPath.get(key) - 1;
        if (k) onPath.set(key, k); else onPath.delete(key);
        continue;
      }
      const kids = node.c || [];
      if (it.depth > skipDepth) {
        let own = node.v;
        for (const c of kids) own -= c.v;
        let e = byKey.get(key);
        if (!e) {
          e = {name: node.n, file: node.f || '', line: node.ln, own: 0, total: 0};
          byKey.set(key, e);
        }
        e.own += own;
        if (!onPath.has(key)) e.total += node.v;
        onPath.set(key, (onPath.get(key) || 0) + 1);
        stack.push({node: node, depth: it.depth, enter: false});
      }
      for (let i = kids.length - 1; i >= 0; i--)
        stack.push({node: kids[i], depth: it.depth + 1, enter: true});
    }
    return Array.from(byKey.values());
  }

  function el(tag, props, children) {
    const e = document.createElement(tag);
    Object.assign(e, props || {});
    for (const c of children || []) e.append(c);
    return e;
  }

  // Fills the <tbody> of @table with the @rows hottest functions by own samples.
  function fillTop(table, tree, skipDepth, rows, onPick) {
    const total = tree.v || 0;
    const fns = topFunctions(tree, skipDepth).sort((a, b) => b.own - a.own || b.total - a.total);
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const f of fns.slice(0, rows)) {
      const bar = el('span', {className: 'bar'});
      bar.style.width = Math.max(1, Math.round((60 * f.own) / (total || 1))) + 'px';
      const name = el('td', {className: 'fn'}, [f.name]);
      if (f.file) name.append(' ', el('small', {textContent: f.file}));
      const tr = el('tr', {title: f.name + (f.file ? ' ' + f.file : '')}, [
        el('td', {className: 'num'}, [bar, share(f.own, total)]),
        el('td', {className: 'num', textContent: share(f.total, total)}),
        el('td', {className: 'num', textContent: String(f.own)}),
        name,
      ]);
      tr.addEventListener('click', () => onPick(f.name));
      body.append(tr);
    }
    return fns.length;
  }

  // Draws @tree into @opts.chart and wires @opts.search, @opts.reset,
  // @opts.details and @opts.top. Returns the d3-flame-graph chart.
  function render(tree, opts) {
    const total = tree.v || 0;
    const box = opts.chart;
    box.replaceChildren();
    if (!total) {
      box.append(el('div', {className: 'empty', textContent: opts.empty || 'No samples.'}));
      if (opts.top) opts.top.tBodies[0].replaceChildren();
      return null;
    }
    const chart = flamegraph.default()
      .width(Math.max(400, box.clientWidth || 1000))
      .cellHeight(18)
      .minFrameSize(1)
      .transitionDuration(200)
      .sort(true)
      .title('')
      .setLabelHandler((d) => label(d, total))
      .setSearchMatch((d, term) => matches(d.data, term));
    if (opts.details) chart.setDetailsElement(opts.details);
    d3.select(box).datum(tree).call(chart);
    const search = (term) => {
      if (term) chart.search(term); else chart.clear();
      box.dataset.search = term;
    };
    if (opts.search) {
      opts.search.oninput = () => search(opts.search.value.trim());
      if (opts.search.value.trim()) search(opts.search.value.trim());
    }
    if (opts.reset) opts.reset.onclick = () => chart.resetZoom();
    if (opts.top) {
      fillTop(opts.top, tree, opts.skipDepth || 0, opts.rows || 30, (name) => {
        if (opts.search) opts.search.value = name;
        search(name);
      });
    }
    box.dataset.rendered = String(total);
    return chart;
  }

  window.pyprofdFlame = {render: render, share: share, topFunctions: topFunctions, el: el};
})();
