// SPDX-License-Identifier: MIT
// The agent's page: the targets table from /targets, refreshed while the
// page is visible (a hidden tab asks nothing), and a flame graph taken on
// demand from /flamegraph with the chosen target, mode and seconds.
(function () {
  'use strict';
  const F = window.pyprofdFlame;
  const $ = (id) => document.getElementById(id);
  const REFRESH_MS = 5000;
  let timer = null;
  let busy = false;
  let previous = new Map(); // pid -> {samples, at}: the achieved rate between two refreshes

  function cell(text, cls) {
    return F.el('td', {className: cls || '', textContent: text === undefined ? '' : String(text)});
  }

  function stateCell(t) {
    const td = cell(t.state, 'state-' + t.state);
    if (t.reason) td.append(F.el('div', {className: 'reason', textContent: t.reason}));
    return td;
  }

  function fillTargets(doc) {
    const body = $('targets').tBodies[0];
    const select = $('target');
    const chosen = select.value;
    body.replaceChildren();
    // Python processes only: the others the agent watches are counted, not listed
    const all = doc.targets || [];
    const targets = all.filter((t) => t.mode || t.python_version).sort((a, b) => a.pid - b.pid);
    const others = all.length - targets.length;
    const now = Date.now();
    const seen = new Map();
    for (const t of targets) {
      const c = t.counts || {};
      const labels = t.labels || {};
      const rate = t.effective_rate_hz !== undefined ? t.effective_rate_hz : t.sample_rate_hz;
      const before = previous.get(t.pid);
      let achieved = '';
      if (before && c.samples !== undefined && now > before.at)
        achieved = ' (' + Math.round((1000 * (c.samples - before.samples)) / (now - before.at)) +
          ' achieved)';
      if (c.samples !== undefined) seen.set(t.pid, {samples: c.samples, at: now});
      const tr = F.el('tr', {}, [
        cell(t.pid, 'num'),
        cell(labels.service_name || t.comm || ''),
        stateCell(t),
        cell((t.python_version || '') + (t.build === 'free-threaded' ? 't' : '')),
        cell(t.mode || ''),
        cell(rate !== undefined ? rate + ' Hz' + achieved : '', 'num'),
        cell(c.samples, 'num'),
        cell(c.failed, 'num'),
        cell(c.missed, 'num'),
      ]);
      tr.dataset.pid = t.pid;
      tr.addEventListener('click', () => { select.value = String(t.pid); });
      body.append(tr);
    }
    previous = seen;
    if (others > 0) {
      const td = cell(others + ' other process' + (others === 1 ? '' : 'es') +
        ' watched, not Python (yet)', 'reason');
      td.colSpan = 9;
      body.append(F.el('tr', {}, [td]));
    }
    const sampled = targets.filter((t) => t.mode);
    select.replaceChildren(F.el('option', {value: '', textContent: 'all targets'}));
    for (const t of sampled) {
      const label = t.pid + ' ' + ((t.labels || {}).service_name || t.comm || '');
      select.append(F.el('option', {value: String(t.pid), textContent: label}));
    }
    if (sampled.some((t) => String(t.pid) === chosen)) select.value = chosen;
    $('title').textContent = 'agent \u2014 ' + sampled.length + ' target' +
      (sampled.length === 1 ? '' : 's') + ' sampled';
  }

  async function refresh() {
    try {
      const r = await fetch('/targets', {cache: 'no-store'});
      if (r.ok) fillTargets(await r.json());
    } catch (e) {
      /* the agent restarted or went away: the next refresh tries again */
    }
  }

  function schedule() {
    clearInterval(timer);
    timer = null;
    if (document.visibilityState === 'visible') {
      refresh();
      timer = setInterval(refresh, REFRESH_MS);
    }
  }

  function status(text, error) {
    $('status').textContent = text;
    $('status').className = error ? 'error' : '';
  }

  async function take(ev) {
    ev.preventDefault();
    if (busy) return;
    const seconds = Math.max(1, Math.min(3600, parseInt($('seconds').value, 10) || 10));
    const q = new URLSearchParams({seconds: String(seconds)});
    const pid = $('target').value;
    const mode = $('mode').value;
    if (pid) q.set('pid', pid);
    if (mode) q.set('mode', mode);
    busy = true;
    $('go').disabled = true;
    const what = (pid ? 'process ' + pid : 'all targets') + (mode ? ', ' + mode + ' mode' : '');
    status('Collecting ' + seconds + ' s of ' + what + '\u2026');
    try {
      const r = await fetch('/flamegraph?' + q.toString(), {cache: 'no-store'});
      if (!r.ok) {
        status((await r.text()).trim() || 'HTTP ' + r.status, true);
        return;
      }
      const tree = await r.json();
      F.render(tree, {
        chart: $('chart'), search: $('search'), reset: $('reset'), details: $('details'),
        top: $('top'), skipDepth: pid ? 0 : 1,
        empty: 'No samples of ' + what + ' in those ' + seconds + ' s.',
      });
      status(tree.v + ' samples of ' + what + ' over ' + seconds + ' s, taken ' +
        new Date().toLocaleTimeString() + '.');
    } catch (e) {
      status('The agent did not answer: ' + e.message, true);
    } finally {
      busy = false;
      $('go').disabled = false;
    }
  }

  function main() {
    $('form').addEventListener('submit', take);
    document.addEventListener('visibilitychange', schedule);
    const p = new URLSearchParams(location.search);
    for (const k of ['seconds', 'mode']) if (p.get(k)) $(k).value = p.get(k);
    schedule();
  }

  main();
})();
