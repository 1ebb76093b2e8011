// SPDX-License-Identifier: MIT
// The heatmap of `pyprofd record --format heatmap`: the sidebar from the
// recording's summary (#pyprofd-meta, summary.js) and each source file with
// its lines' samples (#pyprofd-heatmap, pprof/heatmap.h's JSON). Text is put
// in with textContent only: the source and the names are the target's.
(function () {
  'use strict';
  const S = window.pyprofdSummary;
  const el = S.el;

  function pct(n, total) {
    return total > 0 ? ((100 * n) / total).toFixed(1) + '%' : '';
  }

  // The background of a line: white to red by its own share of the hottest line's.
  function heat(own, max) {
    if (!own || !max) return '';
    const k = Math.sqrt(own / max); // a gentler ramp: a line with 1% of the hottest still shows
    const g = Math.round(245 - 150 * k), b = Math.round(235 - 185 * k);
    return 'rgb(255,' + g + ',' + b + ')';
  }

  // @files: every file, for a name of a file shown under an earlier name ("same_as").
  function fileSection(f, i, files, total, maxOwn, hotOnly) {
    const id = 'file-' + i;
    const sec = el('section', {className: 'file', id: id});
    sec.dataset.path = f.path;
    sec.append(el('h2', {className: 'path', textContent: f.path}),
               el('p', {className: 'reason',
                        textContent: f.samples + ' samples (' + pct(f.samples, total) + ') with a frame ' +
                                     'here, ' + f.own + ' (' + pct(f.own, total) + ') innermost'}));
    if (f.error !== undefined)
      sec.append(el('p', {className: 'reason warn source-error', textContent: 'source not shown: ' + f.error}));
    // another name of a file shown above: its text is that one's, and only the
    // lines with samples are drawn again (the file once in the page, not once per name)
    const same = f.same_as !== undefined ? files[f.same_as] : undefined;
    if (same)
      sec.append(el('p', {className: 'reason same-as',
                          textContent: 'the same file as ' + same.path + ' (only the lines with samples here)'}));
    const onlyHot = hotOnly || same !== undefined;
    const counts = new Map(f.lines.map((l) => [l[0], l]));
    const table = el('table', {className: 'source'});
    table.append(el('thead', {}, [el('tr', {}, [
      el('th', {className: 'num', textContent: 'own'}), el('th', {className: 'num', textContent: 'total'}),
      el('th', {className: 'num', textContent: 'line'}), el('th', {textContent: 'source'})])]));
    const body = el('tbody');
    const text = f.text || (same && same.text) || [];
    const last = Math.max(text.length, f.lines.length ? f.lines[f.lines.length - 1][0] : 0);
    for (let n = 1; n <= last; n++) {
      const c = counts.get(n);
      if (onlyHot && !c) continue;
      const own = c ? c[1] : 0, tot = c ? c[2] : 0;
      const src = el('td', {className: 'src', textContent: n <= text.length ? text[n - 1] : ''});
      if (c && c[3]) {
        const ops = Object.entries(c[3]).map(([op, k]) => op + ' ' + pct(k, tot)).join(', ');
        src.append(el('span', {className: 'ops', textContent: ops}));
      }
      const tr = el('tr', {}, [
        el('td', {className: 'num', textContent: own ? pct(own, total) : ''}),
        el('td', {className: 'num', textContent: tot ? pct(tot, total) : ''}),
        el('td', {className: 'num lineno', textContent: String(n)}), src]);
      tr.dataset.line = n;
      tr.dataset.own = own;
      tr.dataset.total = tot;
      tr.title = 'line ' + n + ': own ' + own + ', total ' + tot + ' samples';
      tr.style.background = heat(own, maxOwn);
      body.append(tr);
    }
    table.append(body);
    sec.append(table);
    return sec;
  }

  function render(data, hotOnly) {
    const box = document.getElementById('sources');
    const list = document.getElementById('files');
    box.replaceChildren();
    list.replaceChildren();
    let maxOwn = 0;
    for (const f of data.files) for (const l of f.lines) maxOwn = Math.max(maxOwn, l[1]);
    if (!data.files.length) box.append(el('p', {className: 'reason', textContent: 'No Python line was sampled.'}));
    data.files.forEach((f, i) => {
      box.append(fileSection(f, i, data.files, data.samples, maxOwn, hotOnly));
      const a = el('a', {href: '#file-' + i, textContent: f.path.split('/').pop()});
      a.title = f.path;
      list.append(el('li', {}, [a, ' ' + pct(f.samples, data.samples)]));
    });
    const status = [];
    if (data.left_off) status.push(data.left_off + ' more files with fewer samples are not shown');
    if (data.text_left_off)
      status.push('the source of ' + data.text_left_off + " files left out: the page's source budget is spent");
    document.getElementById('status').textContent = status.join('; ');
    box.dataset.rendered = '1';
  }

  function main() {
    const meta = JSON.parse(document.getElementById('pyprofd-meta').textContent);
    const data = JSON.parse(document.getElementById('pyprofd-heatmap').textContent);
    S.fill(meta, 'heatmap');
    const hot = document.getElementById('hot-only');
    hot.addEventListener('change', () => render(data, hot.checked));
    render(data, false);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', main);
  else main();
})();
