// Swagger UI for /docs, from the server's own files: no validator badge (it would call an
// outside service) and no inline script (the page's Content-Security-Policy forbids it).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
  deepLinking: true,
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
});
