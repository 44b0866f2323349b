// confirmDialog asks a yes-or-no question in a modal <dialog>: the focus
// goes to the safe choice, Escape or Cancel says no, and the page behind
// cannot be used meanwhile. It resolves true only for the confirm button.

export function confirmDialog(message, confirmLabel, { danger = true } = {}) {
  return new Promise((resolve) => {
    const dlg = document.createElement('dialog');
    dlg.className = 'confirm-dialog';
    dlg.setAttribute('aria-label', confirmLabel);
    const p = document.createElement('p');
    p.textContent = message;
    const row = document.createElement('div');
    row.className = 'row';
    const no = document.createElement('button');
    no.type = 'button';
    no.className = 'confirm-no';
    no.textContent = 'Cancel';
    const yes = document.createElement('button');
    yes.type = 'button';
    yes.className = 'confirm-yes' + (danger ? ' deny' : '');
    yes.textContent = confirmLabel;
    row.append(no, yes);
    dlg.append(p, row);
    const back = document.activeElement;
    let answer = false;
    no.addEventListener('click', () => dlg.close());
    yes.addEventListener('click', () => {
      answer = true;
      dlg.close();
    });
    dlg.addEventListener('close', () => {
      dlg.remove();
      if (back && back.isConnected) back.focus();
      resolve(answer);
    });
    document.body.append(dlg);
    dlg.showModal();
    no.focus();
  });
}
