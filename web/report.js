// SPDX-License-Identifier: MIT
// The HTML report of `pyprofd record --format html`: the sidebar from the
// recording's summary (#pyprofd-meta) and the flame graph of its call tree
// (#pyprofd-tree), both embedded in the page.
(function () {
  'use strict';
  const F = window.pyprofdFlame;

  function row(dl, name, value, cls) {
    if (value === undefined || value === null || value === '') return;
    const dd = F.el('dd', {textContent: String(value)});
    if (cls) dd.className = cls;
    dl.append(F.el('dt', {textContent: name}), dd);
  }

  function fillSidebar(m) {
    const s = document.getElementById('summary');
    const pct = (n, of) => (of > 0 ? ' (' + ((100 * n) / of).toFixed(1) + '%)' : '');
    row(s, 'samples', m.samples);
    row(s, 'duration', m.duration_s.toFixed(2) + ' s');
    row(s, 'rate', m.achieved_hz.toFixed(1) + ' Hz achieved of ' + m.rate_hz + ' Hz');
    row(s, 'failed', m.failed + pct(m.failed, m.attempts), m.failed ? 'warn' : '');
    for (const [why, n] of Object.entries(m.failed_by || {})) row(s, '\u2003' + why, n, 'warn');
    row(s, 'missed', m.missed + pct(m.missed, m.attempts + m.missed), m.missed ? 'warn' : '');
    row(s, 'mode', m.mode);
    row(s, 'threads', m.threads);
    if (m.async) row(s, 'async', m.async);
    row(s, 'started', m.start);
    const t = document.getElementById('target');
    row(t, 'pid', m.pid);
    row(t, 'python', m.python + (m.build ? ' (' + m.build + ')' : ''));
    const cmd = F.el('dd', {}, [F.el('code', {textContent: m.command || '?'})]);
    t.append(F.el('dt', {textContent: 'command'}), cmd);
    row(t, 'pyprofd', m.pyprofd);
    document.getElementById('title').textContent =
      (m.command || 'process ' + m.pid) + ' \u2014 ' + m.mode + ' mode, ' + m.samples + ' samples';
    document.title = 'pyprofd: ' + (m.command || m.pid);
  }

  function main() {
    const meta = JSON.parse(document.getElementById('pyprofd-meta').textContent);
    const tree = JSON.parse(document.getElementById('pyprofd-tree').textContent);
    fillSidebar(meta);
    F.render(tree, {
      chart: document.getElementById('chart'),
      search: document.getElementById('search'),
      reset: document.getElementById('reset'),
      details: document.getElementById('details'),
      top: document.getElementById('top'),
      empty: 'No samples were taken.',
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', main);
  else main();
})();
