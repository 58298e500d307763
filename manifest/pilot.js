// Registered (document_start, every frame) only while AI Web Pilot is on, so the page hook
// knows the switch synchronously, before the page's first script.
if (typeof globalThis.__unmodalPilotOn === 'function') globalThis.__unmodalPilotOn();
else globalThis.__unmodalPilot = true;
