// Package browsertest opens pages in a real headless Chromium for tests,
// driven over the DevTools protocol by chromedp: reports are checked as a
// reader sees them, scripts and layout included.
//
// It imports nothing of idemcheck's; only tests import it.
package browsertest
