// The tool panels (Terminals, Logs) take the session's place in the page
// while one is open; the header's buttons open and close them. Opening one
// tells the modules that own them through app's 'panel' hook.

let app;
let $;

const PANELS = ['terminals', 'logs'];

export function showPanel(name) {
  const was = document.body.dataset.panel || '';
  if (name === was) return;
  for (const p of PANELS) {
    $(p + '-panel').hidden = p !== name;
    $('show-' + p).setAttribute('aria-pressed', String(p === name));
  }
  $('session').hidden = !!name;
  if (name) {
    document.body.dataset.panel = name;
    document.body.dataset.view = 'chat'; // on a narrow screen the panel fills it
  } else delete document.body.dataset.panel;
  app.fire('panel', name || '');
}

export function installPanels(theApp, tools) {
  app = theApp;
  ({ $ } = tools);
  for (const p of PANELS) {
    $('show-' + p).addEventListener('click', () => showPanel(document.body.dataset.panel === p ? '' : p));
  }
  for (const b of document.querySelectorAll('.panel-close')) b.addEventListener('click', () => showPanel(''));
  // Picking or making a session shows it.
  $('sessions-list').addEventListener('click', () => showPanel(''));
  $('new-session-form').addEventListener('submit', () => showPanel(''));
}
