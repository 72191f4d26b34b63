/**
 * Playwright's browser driver for the tests that load the status page and the
 * browser peer in Chromium (`/usr/bin/chromium`). A test package: named here
 * by its full specifier rather than in deno.json, so that a first run of the
 * product does not fetch it.
 *
 * @module
 */
export { chromium, type Page } from "npm:playwright-core@1.65.1";
