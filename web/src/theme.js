// Runs before the stylesheet applies (an external script: the CSP forbids inline ones) so the
// first paint already has the chosen theme (docs/api/dashboard.md §4.4).
(function () {
  var t = null;
  try {
    t = localStorage.getItem('qg.theme');
  } catch (e) {
    t = null;
  }
  if (t !== 'light' && t !== 'dark') t = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.setAttribute('data-theme', t);
})();
