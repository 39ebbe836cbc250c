//! The web tools' HTTP client: built from the configuration the host passed at registration
//! (the one way these tools reach the network), one `reqwest::Client` per destination port so
//! each client's resolver can vet for that port (`guard.rs`), redirects followed by hand so every
//! hop is vetted (`web_fetch` follows only same-origin ones, after its URL checks), bodies
//! streamed under a byte cap.

use crate::error::WebError;
use crate::guard::{Guard, GuardedResolver, MAX_REDIRECTS};
use reqwest::{Method, StatusCode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

/// What every client is built with.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// An explicit proxy (`[web] proxy`); never taken from the environment.
    pub proxy: Option<String>,
    pub connect_timeout: Duration,
    pub user_agent: String,
}

/// The clients of one guard, by port.
pub struct Clients {
    guard: Guard,
    settings: ClientSettings,
    by_port: Mutex<HashMap<u16, reqwest::Client>>,
}

/// A response whose status and headers arrived (the body not yet read).
pub struct Reply {
    pub final_url: Url,
    pub response: reqwest::Response,
}

/// A prepared request: method, URL, headers and an optional JSON body.
pub struct Outgoing {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub json: Option<serde_json::Value>,
}

impl Clients {
    pub fn new(guard: Guard, settings: ClientSettings) -> Self {
        Clients { guard, settings, by_port: Mutex::new(HashMap::new()) }
    }

    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    fn client(&self, port: u16, url: &Url) -> Result<reqwest::Client, WebError> {
        let failed = |detail: String| WebError::Request { url: url.to_string(), detail };
        let mut clients = self.by_port.lock().map_err(|_| failed("client pool poisoned".into()))?;
        if let Some(client) = clients.get(&port) {
            return Ok(client.clone());
        }
        crate::install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.settings.connect_timeout)
            .user_agent(self.settings.user_agent.clone());
        builder = match &self.settings.proxy {
            // Through a proxy the only name resolved here is the proxy's own (the proxy resolves
            // the targets), so the guard vets address literals and leaves names to the proxy the
            // user chose.
            Some(proxy) => builder.proxy(
                reqwest::Proxy::all(proxy).map_err(|e| failed(format!("[web] proxy: {e}")))?,
            ),
            None => builder
                .no_proxy()
                .dns_resolver(Arc::new(GuardedResolver { guard: self.guard.clone(), port })),
        };
        let client = builder.build().map_err(|e| failed(e.to_string()))?;
        clients.insert(port, client.clone());
        Ok(client)
    }

    /// One request to `url`, vetted by the guard; redirects are the caller's.
    async fn once(
        &self,
        method: &Method,
        url: &Url,
        headers: &[(String, String)],
        json: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, WebError> {
        let port = self.guard.vet_url(url)?;
        let client = self.client(port, url)?;
        let mut builder = client.request(method.clone(), url.clone());
        for (name, value) in headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = json {
            builder = builder.json(body);
        }
        builder.send().await.map_err(|e| request_error(url, &e))
    }

    /// Sends `request`, following at most [`MAX_REDIRECTS`] redirects wherever they lead, each
    /// hop vetted (a search provider's API).
    pub async fn send(&self, request: Outgoing) -> Result<Reply, WebError> {
        let Outgoing { mut method, mut url, headers, mut json } = request;
        for _ in 0..=MAX_REDIRECTS {
            let response = self.once(&method, &url, &headers, json.as_ref()).await?;
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(Reply { final_url: url, response });
            }
            let location = location(&response).ok_or(WebError::NoLocation(status.as_u16()))?;
            let next = url.join(&location).map_err(|_| WebError::BadLocation(location.clone()))?;
            // 303 (and historically 301/302 for POST) turn into a GET without a body.
            if status == StatusCode::SEE_OTHER
                || (method == Method::POST
                    && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND))
            {
                method = Method::GET;
                json = None;
            }
            url = next;
        }
        Err(WebError::TooManyRedirects(MAX_REDIRECTS))
    }

    /// `web_fetch`'s GET: `url` already passed [`check_url`]. A redirect (301, 302, 303, 307,
    /// 308) is followed only to the same origin and at most [`MAX_REDIRECTS`] times; its target
    /// passes the same URL checks first. Any other status is the answer.
    pub async fn get_same_origin(
        &self,
        mut url: Url,
        headers: &[(String, String)],
        max_url_len: usize,
    ) -> Result<Reply, WebError> {
        let mut followed = 0;
        loop {
            let response = self.once(&Method::GET, &url, headers, None).await?;
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return Ok(Reply { final_url: url, response });
            }
            // The budget is checked before the next hop is even looked at.
            if followed >= MAX_REDIRECTS {
                return Err(WebError::TooManyRedirects(MAX_REDIRECTS));
            }
            let location = location(&response).ok_or(WebError::NoLocation(status))?;
            let target =
                url.join(&location).map_err(|_| WebError::BadLocation(location.clone()))?;
            // A redirect is no way around the checks a URL given directly gets.
            let target = check_url(target.as_str(), max_url_len)?;
            if !same_origin(&target, &url) {
                return Err(WebError::CrossOrigin(target.origin().ascii_serialization()));
            }
            url = target;
            followed += 1;
        }
    }
}

/// A response's `Location`, its bytes read as Latin-1 like a browser's `Headers` reads them.
fn location(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(reqwest::header::LOCATION)?;
    Some(value.as_bytes().iter().map(|&b| char::from(b)).collect())
}

/// The checks every `web_fetch` URL passes before any connection, in this order: its length as
/// given (UTF-16 units), that it parses, http or https, no user name or password.
pub fn check_url(input: &str, max_len: usize) -> Result<Url, WebError> {
    if input.encode_utf16().count() > max_len {
        return Err(WebError::UrlTooLong(max_len));
    }
    let url = Url::parse(input).map_err(|_| WebError::InvalidUrl(input.to_owned()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::Scheme(format!("{}:", url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some_and(|p| !p.is_empty()) {
        return Err(WebError::Credentials);
    }
    Ok(url)
}

/// Same scheme, host and port (a default port written out is the same port).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && a.host_str() == b.host_str() && a.port() == b.port()
}

/// The guard's own denial when it is what failed the connection; otherwise a request error.
fn request_error(url: &Url, error: &reqwest::Error) -> WebError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(web) = current.downcast_ref::<WebError>() {
            return web.clone();
        }
        source = current.source();
    }
    let mut detail = error.to_string();
    let mut inner = std::error::Error::source(error);
    while let Some(cause) = inner {
        detail = format!("{detail}: {cause}");
        inner = cause.source();
    }
    WebError::Request { url: url.to_string(), detail }
}

/// A body read under a byte cap.
pub struct Body {
    pub bytes: Vec<u8>,
    /// The cap cut it (the rest was never read).
    pub cut: bool,
}

/// Reads the body chunk by chunk, keeping at most `max_bytes`: the connection is dropped as soon
/// as the cap is reached, so a huge or endless body is never buffered past it.
pub async fn read_capped(
    mut response: reqwest::Response,
    max_bytes: usize,
    url: &Url,
) -> Result<Body, WebError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(url, &e))? {
        let room = max_bytes.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body { bytes, cut: false })
}
