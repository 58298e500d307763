//! The C ABI the page's loader calls (numbers in, strings through linear memory).
//! Single-threaded by construction: one instance per document.

use crate::{DialogKind, Engine, MAX_TEXT_UNITS, Subject};
use core::cell::UnsafeCell;

const IO_UNITS: usize = crate::config::ARENA_UNITS + 1024;

/// A global for a module that has one thread: wasm32 without the threads proposal.
struct Global<T>(UnsafeCell<T>);

// SAFETY: the module never runs on more than one thread.
unsafe impl<T> Sync for Global<T> {}

static ENGINE: Global<Engine> = Global(UnsafeCell::new(Engine::new()));
static IO: Global<[u16; IO_UNITS]> = Global(UnsafeCell::new([0; IO_UNITS]));

fn engine() -> &'static mut Engine {
    // SAFETY: one thread, and no reference outlives the exported call that took it.
    unsafe { &mut *ENGINE.0.get() }
}

fn io() -> &'static mut [u16; IO_UNITS] {
    // SAFETY: as above.
    unsafe { &mut *IO.0.get() }
}

/// Byte offset of the UTF-16 exchange buffer.
#[unsafe(no_mangle)]
pub extern "C" fn io_ptr() -> u32 {
    io().as_ptr() as u32
}

/// Capacity of the exchange buffer, in code units.
#[unsafe(no_mangle)]
pub extern "C" fn io_cap() -> u32 {
    IO_UNITS as u32
}

/// Loads the config written to the buffer; returns the rule count or a negative error.
#[unsafe(no_mangle)]
pub extern "C" fn load(len: u32) -> i32 {
    let Some(input) = io().get(..len as usize) else {
        return -2;
    };
    match engine().load(input) {
        Ok(n) => n as i32,
        Err(e) => e.code(),
    }
}

/// 1 when the config has the AI Web Pilot on.
#[unsafe(no_mangle)]
pub extern "C" fn pilot() -> u32 {
    u32::from(engine().pilot_on())
}

/// What the page must copy before `decide`: bit 0 the message, bit 1 the page URL.
#[unsafe(no_mangle)]
pub extern "C" fn needs() -> u32 {
    engine().needs()
}

/// Decides a dialog of `kind` whose message (`msg_len` units) and then page URL
/// (`url_len` units) are in the buffer; see `Decision::pack` for the result layout.
#[unsafe(no_mangle)]
pub extern "C" fn decide(kind: u32, msg_len: u32, url_len: u32) -> u32 {
    let Some(kind) = DialogKind::from_u8(kind as u8) else { return 0 };
    let (m, u) = (msg_len as usize, url_len as usize);
    let buf: &[u16] = io();
    let message = buf.get(..m).unwrap_or(&[]);
    let url = buf.get(m..m.saturating_add(u)).unwrap_or(&[]);
    engine().decide_for(kind, Subject { message, url }).pack()
}

#[unsafe(no_mangle)]
pub extern "C" fn rule_id(slot: u32) -> u32 {
    engine().rule_id(slot as usize).unwrap_or(0)
}

/// Copies the rule's prompt text into the buffer; returns its length, or -1 for none.
#[unsafe(no_mangle)]
pub extern "C" fn rule_text(slot: u32) -> i32 {
    let Some(text) = engine().rule_text(slot as usize) else {
        return -1;
    };
    let n = text.len().min(MAX_TEXT_UNITS);
    io()[..n].copy_from_slice(&text[..n]);
    n as i32
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
