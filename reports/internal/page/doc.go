// Package page is the HTML shell every report page shares (the
// conformance page of reports, the chaos and load pages): the document's
// head, the first rules of its style and the verdict badge, as templates
// each page's own template is parsed beside (New), so the three pages
// start alike and say a verdict alike.
//
// It imports nothing of idemcheck's; only the packages under reports/ may
// import it (Go's internal rule), and only they render HTML
// (internal/archtest checks this).
package page
