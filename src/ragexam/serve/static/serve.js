// ragexam serve: keyboard shortcuts and the editor of the review screen (no framework, no build step).
(function () {
  'use strict';
  function $(id) { return document.getElementById(id); }
  var editor = $('editor'), decide = $('decide'), help = $('help'), audit = $('audit'), undo = $('audit-undo');
  var sent = false;

  function openEditor() {
    if (!editor) { return; }
    editor.hidden = false;
    var q = $('e-question');
    if (q) { q.focus(); }
  }
  function closeEditor() { if (editor) { editor.hidden = true; } }
  function submit(id) {
    var b = $(id);
    if (b && b.form) { b.form.requestSubmit(b); }
  }
  function go(id) {
    var a = $(id);
    if (a) { window.location.href = a.href; }
  }
  function useSelection() {
    var sel = window.getSelection ? String(window.getSelection()).trim() : '';
    if (!sel || !editor) { return; }
    openEditor();
    var boxes = Array.prototype.slice.call(editor.querySelectorAll('textarea.e-evidence'));
    var target = lastEvidence || boxes.filter(function (t) { return !t.value.trim(); })[0] || boxes[boxes.length - 1];
    if (target) { target.value = sel; target.focus(); }
  }

  // the evidence box last written in receives a selection (key s); else the first empty one
  var lastEvidence = null;
  if (editor) {
    editor.addEventListener('focusin', function (ev) {
      if (ev.target.classList && ev.target.classList.contains('e-evidence')) { lastEvidence = ev.target; }
    });
  }
  var edit = $('edit');
  if (edit) { edit.addEventListener('click', openEditor); }
  var cancel = $('cancel');
  if (cancel) { cancel.addEventListener('click', closeEditor); }
  var toggle = $('help-toggle');
  if (toggle && help) { toggle.addEventListener('click', function () { help.hidden = !help.hidden; }); }

  document.addEventListener('keydown', function (ev) {
    var t = ev.target, typing = t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT');
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey) && editor && !editor.hidden) {
      ev.preventDefault(); submit('save-accept'); return;
    }
    if (ev.key === 'Escape') {
      if (typing) { t.blur(); }
      closeEditor(); if (help) { help.hidden = true; }
      return;
    }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var k = ev.key;
    if (audit || undo) {  // the audit page: g good, 1-6 bad for that reason, u undo; one key per page shown
      var target = (k === 'g' && audit) ? 'audit-good' : (/^[1-9]$/.test(k) && audit && $('audit-bad-' + k)) ?
        'audit-bad-' + k : (k === 'u' && undo) ? 'audit-undo' : null;
      if (target) { ev.preventDefault(); if (!sent) { sent = true; submit(target); } return; }
    }
    if (k === 'a' && decide) { ev.preventDefault(); submit('accept'); }
    else if (k === 'r' && decide) { ev.preventDefault(); submit('reject'); }
    else if (k === 'p' && decide) { ev.preventDefault(); submit('pending'); }
    else if (k === 'u' && decide && $('runner-up')) { ev.preventDefault(); submit('runner-up'); }
    else if (k === 'o' && decide && $('ooc')) { ev.preventDefault(); submit('ooc'); }
    else if (k === 'e') { ev.preventDefault(); openEditor(); }
    else if (k === 's') { ev.preventDefault(); useSelection(); }
    else if (k === 'j' || k === 'ArrowRight') { go('next'); }
    else if (k === 'k' || k === 'ArrowLeft') { go('prev'); }
    else if (k === '?' && help) { help.hidden = !help.hidden; }
  });

  // the first evidence mark in view
  var pane = document.querySelector('.passages'), mark = pane && pane.querySelector('mark');
  if (mark) { pane.scrollTop = Math.max(0, mark.offsetTop - pane.offsetTop - 120); }
  var refused = $('refused');
  if (refused && editor && !editor.hidden) { refused.scrollIntoView({block: 'start'}); }
})();
