#!/usr/bin/env node
// The `unmodal` command of the npm package `unmodal` (written by `cargo xtask dist`). The
// binary itself comes in the package for this platform, an optional dependency such as
// @unmodal/linux-x64, which npm installs only where its `os` and `cpu` match. This runs
// that binary with the same arguments and stdio, and exits as it does.
'use strict';

const { spawn } = require('child_process');

/** The platforms this release has a package for, as `${process.platform}-${process.arch}`. */
const PLATFORMS = /*@PLATFORMS@*/ [];

const platform = `${process.platform}-${process.arch}`;
const pkg = `@unmodal/${platform}`;
const exe = process.platform === 'win32' ? 'unmodal.exe' : 'unmodal';

function fail(message) {
  process.stderr.write(`unmodal: ${message}\n`);
  process.exit(1);
}

let binary;
try {
  binary = require.resolve(`${pkg}/bin/${exe}`);
} catch {
  if (!PLATFORMS.includes(platform)) {
    fail(
      `there is no Unmodal package for this platform (${platform}); this release has ${PLATFORMS.join(', ')}. ` +
        'Build it from source instead (see "Install" in the README: cargo xtask build).',
    );
  }
  fail(
    `the package ${pkg}, which carries Unmodal's binary for this platform (${platform}), is not installed. ` +
      `It is an optional dependency of unmodal: install unmodal again without --omit=optional (or --no-optional), ` +
      `or install ${pkg} beside it.`,
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
child.on('error', (e) => fail(`could not start ${binary}: ${e.message}`));

// On Windows the console's Ctrl-C and close reach the binary itself, and a forwarded
// signal would only terminate it, so nothing is forwarded there.
const forwarded = process.platform === 'win32' ? [] : ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of forwarded) {
  process.on(signal, () => child.kill(signal));
}

child.on('exit', (code, signal) => {
  if (signal) {
    // End the same way, so that whoever started `unmodal` sees the signal.
    // (A signal Node ignores, such as SIGPIPE, leaves the shell's 128 + n as the code.)
    for (const s of forwarded) process.removeAllListeners(s);
    process.exitCode = 128 + (require('os').constants.signals[signal] ?? 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
