// Highlighting of query terms in result snippets, for the minisearch web page.

/**
 * Wrap every occurrence of the query terms in <mark> tags.
 * Matching is case-insensitive; HTML in the snippet is escaped first.
 */
export function highlight(snippet, terms) {
  const escaped = escapeHtml(snippet);
  if (!terms.length) return escaped;
  const pattern = new RegExp(`\\b(${terms.map(escapeRegExp).join("|")})\\b`, "gi");
  return escaped.replace(pattern, "<mark>$1</mark>");
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export class ResultList {
  constructor(element) {
    this.element = element;
  }

  // Render hits as a list, each with its highlighted snippet.
  render(hits, terms) {
    this.element.innerHTML = hits
      .map((hit) => `<li><a href="${hit.url}">${hit.title}</a><p>${highlight(hit.snippet, terms)}</p></li>`)
      .join("");
  }
}
