// Every kind the worker carries, one line each (as the host's `kinds::ALL`): the only place
// that lists them. What a kind is and does is its own file's (kind_registry.js says what a
// kind declares); nothing else in the worker names one.
import { auth } from './auth.js';
import { permission } from './permissions.js';
import { deviceChooser } from './choosers.js';
import { appLink } from './applinks.js';
import { passkey } from './passkeys.js';
import { print } from './print.js';
import { signIn, payment, storageAccess, eyeDropper } from './held_in_page.js';
import { fileChooser } from './file_chooser.js';
import { download } from './downloads.js';

export const KINDS = [
  auth,
  permission,
  deviceChooser,
  appLink,
  passkey,
  print,
  signIn,
  payment,
  storageAccess,
  eyeDropper,
  fileChooser,
  download,
];
