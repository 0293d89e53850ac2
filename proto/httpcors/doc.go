// Package httpcors lets browser players (hls.js, video.js, Shaka Player on
// an operator's web page, served from another origin) read the HTTP
// answers of the front door and of the nodes: the CORS headers of the
// Fetch standard on every answer, and the answer to a preflight OPTIONS.
// Every origin is allowed ("*"): no answer depends on cookies, the
// credentials a player sends are its own (Basic, a subscriber token, the
// admission token in the URL), and a browser does not attach stored
// credentials to a request whose answer allows "*".
package httpcors
