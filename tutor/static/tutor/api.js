// The API client of the student page: authentication, CSRF and one error shape.
//
// Two ways to be signed in: a Django session (the sign-in form), or an API
// token pasted by the student and kept in sessionStorage (this tab only).
// With a token every request carries `Authorization: Token …` and no CSRF
// token is needed; with a session, DRF's SessionAuthentication refuses an
// unsafe request without the CSRF token, so it goes in `X-CSRFToken`.

const TOKEN_KEY = "tutor.apiToken";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export class ApiError extends Error {
  constructor(status, body) {
    super(`HTTP ${status}`);
    this.status = status;
    this.body = body;
  }

  // drf-standardized-errors: {type, errors: [{code, detail, attr}]}
  get errors() {
    return (this.body && Array.isArray(this.body.errors) && this.body.errors) || [];
  }

  get detail() {
    const parts = this.errors.map((e) => (e.attr ? `${e.attr}: ${e.detail}` : e.detail));
    return parts.join("; ") || this.message;
  }
}

export const auth = {
  token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  setToken(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clearToken() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

// The cookie is the current token even after a sign-in in another tab
// rotated it; the value rendered into the page is the fallback (e.g. when
// the cookie is HttpOnly).
function csrfToken() {
  return cookie("csrftoken") || document.body.dataset.csrfToken || "";
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = auth.token();
  if (token) {
    headers.Authorization = `Token ${token}`;
  } else if (!SAFE_METHODS.has(method)) {
    headers["X-CSRFToken"] = csrfToken();
  }
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Every page of a paginated list ({next, results}); `next` is an absolute
// URL of this same origin.
export async function apiAll(path, onPage) {
  const rows = [];
  let url = path;
  while (url) {
    const page = await api("GET", url);
    rows.push(...page.results);
    if (onPage) onPage(rows.length);
    if (page.next) {
      const next = new URL(page.next, window.location.href);
      url = next.pathname + next.search;
    } else {
      url = null;
    }
  }
  return rows;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
