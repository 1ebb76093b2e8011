// SPDX-License-Identifier: MIT
// The HTML report of `pyprofd record --format html`: the sidebar from the
// recording's summary (#pyprofd-meta, summary.js) and the flame graph of its call tree
// (#pyprofd-tree), both embedded in the page.
(function () {
  'use strict';
  const F = window.pyprofdFlame;

  function main() {
    const meta = JSON.parse(document.getElementById('pyprofd-meta').textContent);
    const tree = JSON.parse(document.getElementById('pyprofd-tree').textContent);
    window.pyprofdSummary.fill(meta);
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
