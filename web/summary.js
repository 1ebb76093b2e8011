// SPDX-License-Identifier: MIT
// The sidebar of the pages `pyprofd record` writes (report.html, heatmap.html):
// the recording's summary (#pyprofd-meta; docs/usage.md lists its keys) in
// the #summary and #target lists, the header line and the page title.
(function () {
  'use strict';

  function el(tag, props, children) {
    const e = document.createElement(tag);
    Object.assign(e, props || {});
    for (const c of children || []) e.append(c);
    return e;
  }

  function row(dl, name, value, cls) {
    if (value === undefined || value === null || value === '') return;
    const dd = el('dd', {textContent: String(value)});
    if (cls) dd.className = cls;
    dl.append(el('dt', {textContent: name}), dd);
  }

  function fill(m, what) {
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
    const cmd = el('dd', {}, [el('code', {textContent: m.command || '?'})]);
    t.append(el('dt', {textContent: 'command'}), cmd);
    row(t, 'pyprofd', m.pyprofd);
    document.getElementById('title').textContent =
      (m.command || 'process ' + m.pid) + ' \u2014 ' + m.mode + ' mode, ' + m.samples + ' samples';
    document.title = 'pyprofd' + (what ? ' ' + what : '') + ': ' + (m.command || m.pid);
  }

  window.pyprofdSummary = {fill: fill, el: el};
})();
