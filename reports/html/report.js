// Filter by status, count what is shown, expand failures, copy curl.
(function () {
  var boxes = document.querySelectorAll('#filters input[data-filter]');
  var results = document.querySelectorAll('details.result');
  function apply() {
    var on = {};
    boxes.forEach(function (b) { on[b.value] = b.checked; });
    var shown = 0;
    results.forEach(function (r) {
      var visible = on[r.dataset.status] !== false;
      r.hidden = !visible;
      if (visible) shown++;
    });
    document.querySelectorAll('section.family').forEach(function (f) {
      f.hidden = f.querySelectorAll('details.result:not([hidden])').length === 0;
    });
    document.getElementById('shown').textContent = shown + ' of ' + results.length;
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  document.getElementById('expand-problems').addEventListener('click', function () {
    document.querySelectorAll('details.result[data-status="fail"], details.result[data-status="incomplete"]')
      .forEach(function (d) { d.open = true; });
  });
  document.querySelectorAll('.curl button.copy').forEach(function (b) {
    b.addEventListener('click', function () {
      var text = b.parentNode.querySelector('.curl-cmd').textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text);
    });
  });
  apply();
})();
