// Registered (document_start, frames with a URL of their own) only while AI Web Pilot is
// on, so content.js knows the switch synchronously, before the page's first script (it
// reads this flag when the page hook first asks, whichever of the two scripts ran first).
globalThis.__unmodalPilot = true;
