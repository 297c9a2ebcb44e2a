// Notes: shows how many notes are on the page.
(function () {
  var items = document.querySelectorAll('#notes li');
  var count = document.getElementById('note-count');
  if (count) {
    count.textContent = items.length + (items.length === 1 ? ' note' : ' notes');
  }
})();
