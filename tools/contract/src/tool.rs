//! Tool definitions: the typed `Tool` trait (schemas derived with schemars) and `RawTool` for
//! dynamic tools (raw JSON schemas and closures over `serde_json::Value`), erased behind one
//! interface ([`ErasedTool`]) the registry dispatches through.

use crate::context::ToolContext;
use crate::error::{RegistrationError, ToolError};
use crate::future::BoxFuture;
use crate::schema::CompiledSchema;
use crate::snapshot::{SnapshotError, lossless_value, to_lossless_value};
use crate::spill::{OwnSpill, SpillMode};
use crate::standard_schema::standardize;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};

/// A typed tool. The body returns only its canonical value; the Native text and the presentation
/// metadata are pure projections of (args, value) computed by the registry after validation.
pub trait Tool: Send + Sync + 'static {
    /// Arguments, deserialized after they validated against the derived input schema.
    type Args: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The canonical value; its derived schema is the tool's output schema.
    type Output: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static;

    fn name(&self) -> &str;
    fn description(&self) -> String;

    /// The body. It reaches the world only through `cx` and must observe `cx.signal()`.
    fn call(
        &self,
        args: Self::Args,
        cx: ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// The Native (model-facing) rendering. Pure.
    fn render(&self, args: &Self::Args, output: &Self::Output) -> Vec<ContentBlock>;

    /// Presentation metadata for cards (direct calls only). Pure.
    fn presentation_meta(&self, _args: &Self::Args, _output: &Self::Output) -> Option<Value> {
        None
    }

    /// [`Tool::presentation_meta`] given the validated value `output` came from too: a tool whose
    /// meta is its value with a few fields added overrides this to copy the value rather than
    /// serialize its output a second time (a read's page is a thousand line objects). It must
    /// equal `presentation_meta(args, output)`.
    fn presentation_meta_from_value(
        &self,
        args: &Self::Args,
        output: &Self::Output,
        _value: &Value,
    ) -> Option<Value> {
        self.presentation_meta(args, output)
    }

    /// A deadline enforced by the timeout wrapper.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether this call may overlap other concurrency-safe calls.
    fn concurrency_safe(&self, _args: &Self::Args) -> bool {
        false
    }

    /// Bumped whenever `render` or `presentation_meta` output changes; recorded in the log.
    fn renderer_version(&self) -> u32 {
        1
    }

    /// How a call looks before it has a result: card kind, title, locations, preview. Pure, and
    /// it must accept any JSON (a replayed, obsolete or invalid call's arguments). Recorded in
    /// the session log, so every card of the call follows from it and the call's outcome.
    fn present_call(&self, _args: &Value) -> CallPresentation {
        CallPresentation::generic(self.name())
    }

    /// What the tool's calls do to the world (MCP annotations; the session log also skips the
    /// separate sync of a read-only call's start).
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Every change a call of this tool makes to the world is a write or edit through the
    /// workspace (whose change keepers are asked before any file is replaced). The host then
    /// lets the body start while the call's record is being synced and holds only the first
    /// replace until the record is durable, instead of holding the whole body.
    fn changes_only_through_workspace(&self) -> bool {
        false
    }

    /// A tool of the host's own machinery (the calls of an agent the host runs are recorded
    /// through one): called by the host only, never listed — not to a model, a program or an
    /// editor — and unknown to a model's call.
    fn internal(&self) -> bool {
        false
    }

    /// How an oversized direct result is kept out of the model's context (the host's generic
    /// spill unless the tool bounds its output itself or spills in its own format).
    fn spill_mode(&self) -> SpillMode {
        SpillMode::Generic
    }

    /// With [`SpillMode::Own`]: the complete output to store and the page to show instead, or
    /// `None` when this result needs no spill. Pure.
    fn spill_over(&self, _args: &Self::Args, _output: &Self::Output) -> Option<OwnSpill> {
        None
    }
}

type RawBody =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;
type RawRender = dyn Fn(&Value, &Value) -> Vec<ContentBlock> + Send + Sync;
type RawMeta = dyn Fn(&Value, &Value) -> Option<Value> + Send + Sync;
type RawSafe = dyn Fn(&Value) -> bool + Send + Sync;
type RawPresent = dyn Fn(&Value) -> CallPresentation + Send + Sync;

/// A dynamic tool (MCP bridges, plugins, tests): raw schemas and closures over JSON values.
#[derive(Clone, Default)]
pub struct RawTool {
    pub name: String,
    pub description: String,
    pub input_schema: Option<Value>,
    /// Mandatory: a tool without an output declaration is refused at registration.
    pub output_schema: Option<Value>,
    pub execute: Option<Arc<RawBody>>,
    /// Mandatory, like the output schema.
    pub render: Option<Arc<RawRender>>,
    pub presentation_meta: Option<Arc<RawMeta>>,
    /// Whether the registry validates arguments against `input_schema` (MCP tools: no).
    pub validate_args: bool,
    pub timeout: Option<Duration>,
    pub concurrency_safe: Option<Arc<RawSafe>>,
    pub renderer_version: u32,
    /// The call's card declaration; without one, calls get the generic card.
    pub present_call: Option<Arc<RawPresent>>,
    pub annotations: ToolAnnotations,
    pub spill_mode: SpillMode,
}

impl RawTool {
    /// A raw tool with the given name, an open input schema and argument validation on.
    pub fn new(name: impl Into<String>) -> Self {
        RawTool {
            name: name.into(),
            input_schema: Some(serde_json::json!({"type": "object"})),
            validate_args: true,
            renderer_version: 1,
            ..Default::default()
        }
    }

    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    pub fn with_execute<F, Fut>(mut self, body: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.execute = Some(Arc::new(move |args, cx| Box::pin(body(args, cx))));
        self
    }

    pub fn with_render(
        mut self,
        render: impl Fn(&Value, &Value) -> Vec<ContentBlock> + Send + Sync + 'static,
    ) -> Self {
        self.render = Some(Arc::new(render));
        self
    }

    pub fn with_presentation_meta(
        mut self,
        meta: impl Fn(&Value, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.presentation_meta = Some(Arc::new(meta));
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn with_concurrency_safe(
        mut self,
        safe: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.concurrency_safe = Some(Arc::new(safe));
        self
    }

    /// Declares the tool's card (see [`Tool::present_call`]).
    pub fn with_present_call(
        mut self,
        present: impl Fn(&Value) -> CallPresentation + Send + Sync + 'static,
    ) -> Self {
        self.present_call = Some(Arc::new(present));
        self
    }

    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// How oversized results spill (raw tools cannot spill in a format of their own).
    pub fn with_spill_mode(mut self, mode: SpillMode) -> Self {
        self.spill_mode = if mode == SpillMode::Own { SpillMode::Generic } else { mode };
        self
    }
}

/// The Native content and the presentation metadata of one value.
pub type Projection = (Vec<ContentBlock>, Option<Value>);

/// What a body invocation produced, before normalization.
pub enum BodyOutcome {
    Value(Value),
    /// The value could not be snapshotted losslessly (the detail names why).
    Lossy(String),
    Failed(ToolError),
}

/// The registry's view of any tool, typed or raw.
pub trait ErasedTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> String;
    fn input_schema(&self) -> &CompiledSchema;
    fn output_schema(&self) -> &CompiledSchema;
    fn timeout(&self) -> Option<Duration>;
    fn concurrency_safe(&self, args: &Value) -> bool;
    fn renderer_version(&self) -> u32;
    fn present_call(&self, args: &Value) -> CallPresentation;
    fn annotations(&self) -> ToolAnnotations;
    /// See [`Tool::changes_only_through_workspace`] (raw tools: never).
    fn changes_only_through_workspace(&self) -> bool;
    /// See [`Tool::internal`] (raw tools: never).
    fn internal(&self) -> bool;
    fn spill_mode(&self) -> SpillMode;
    /// The tool's own spill of a validated result (see [`Tool::spill_over`]).
    fn spill_over(&self, args: &Value, value: &Value) -> Option<OwnSpill>;
    fn invoke(&self, args: Arc<Value>, cx: ToolContext) -> BoxFuture<'static, BodyOutcome>;
    /// Both projections of a validated value; the meta only when `with_meta` (direct calls).
    /// The error is `output.render failed: …` / `output.presentationMeta failed: …`.
    fn project(&self, args: &Value, value: &Value, with_meta: bool) -> Result<Projection, String>;
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<unprintable panic payload>".to_owned()
    }
}

fn snapshot_detail(err: SnapshotError) -> String {
    match err {
        SnapshotError::NotLossless(_) => "value is not lossless JSON".to_owned(),
        SnapshotError::Failed(msg) => format!("value snapshot failed: {msg}"),
    }
}

fn validate_timeout(name: &str, timeout: Option<Duration>) -> Result<(), RegistrationError> {
    match timeout {
        Some(t) if t.is_zero() => Err(RegistrationError::InvalidTimeout(name.to_owned())),
        _ => Ok(()),
    }
}

/// Strips `null` from optional argument types: an omitted argument is how "no value" is said, and
/// documented parameter schemas never declare null (so `"offset" must be a number` stays exact).
#[derive(Clone)]
struct NonNullOptions;

impl schemars::transform::Transform for NonNullOptions {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(obj) = schema.as_object_mut() {
            if let Some(Value::Array(types)) = obj.get("type") {
                let rest: Vec<Value> =
                    types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
                if rest.len() == 1 {
                    obj.insert("type".into(), rest[0].clone());
                } else if rest.len() != types.len() {
                    obj.insert("type".into(), Value::Array(rest));
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(branches)) = obj.get(key) {
                    let rest: Vec<Value> = branches
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                        .cloned()
                        .collect();
                    if rest.len() == 1 && branches.len() == 2 {
                        obj.remove(key);
                        if let Value::Object(only) = &rest[0] {
                            for (k, v) in only {
                                obj.insert(k.clone(), v.clone());
                            }
                        }
                    }
                }
            }
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}

/// The derived JSON schema of `T` (2020-12), in standard terms ([`standardize`]). Argument
/// schemas drop `null` from optional fields.
pub(crate) fn derived_schema<T: JsonSchema>(for_args: bool) -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    if for_args {
        settings = settings.for_deserialize().with_transform(NonNullOptions);
    } else {
        settings = settings.for_serialize();
    }
    standardize(settings.into_generator().into_root_schema_for::<T>().to_value())
}

pub(crate) struct TypedTool<T: Tool> {
    tool: Arc<T>,
    name: String,
    input: CompiledSchema,
    output: CompiledSchema,
}

impl<T: Tool> TypedTool<T> {
    pub(crate) fn new(tool: T) -> Result<Self, RegistrationError> {
        let name = tool.name().to_owned();
        validate_timeout(&name, tool.timeout())?;
        let input = CompiledSchema::compile(&name, "inputSchema", derived_schema::<T::Args>(true))?;
        let output =
            CompiledSchema::compile(&name, "outputSchema", derived_schema::<T::Output>(false))?;
        Ok(TypedTool { tool: Arc::new(tool), name, input, output })
    }

    fn typed_args(args: &Value) -> Result<T::Args, String> {
        T::Args::deserialize(args).map_err(|e| e.to_string())
    }
}

use serde::Deserialize as _;

impl<T: Tool> ErasedTool for TypedTool<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.tool.description()
    }

    fn input_schema(&self) -> &CompiledSchema {
        &self.input
    }

    fn output_schema(&self) -> &CompiledSchema {
        &self.output
    }

    fn timeout(&self) -> Option<Duration> {
        self.tool.timeout()
    }

    fn concurrency_safe(&self, args: &Value) -> bool {
        if !self.input.violations(args, "arguments").is_empty() {
            return false;
        }
        match Self::typed_args(args) {
            Ok(args) => catch_unwind(AssertUnwindSafe(|| self.tool.concurrency_safe(&args)))
                .unwrap_or(false),
            Err(_) => false,
        }
    }

    fn renderer_version(&self) -> u32 {
        self.tool.renderer_version()
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        catch_unwind(AssertUnwindSafe(|| self.tool.present_call(args)))
            .unwrap_or_else(|_| CallPresentation::generic(&self.name))
    }

    fn annotations(&self) -> ToolAnnotations {
        self.tool.annotations()
    }

    fn changes_only_through_workspace(&self) -> bool {
        self.tool.changes_only_through_workspace()
    }

    fn internal(&self) -> bool {
        self.tool.internal()
    }

    fn spill_mode(&self) -> SpillMode {
        self.tool.spill_mode()
    }

    fn spill_over(&self, args: &Value, value: &Value) -> Option<OwnSpill> {
        let args = Self::typed_args(args).ok()?;
        let output = T::Output::deserialize(value).ok()?;
        catch_unwind(AssertUnwindSafe(|| self.tool.spill_over(&args, &output))).ok().flatten()
    }

    fn invoke(&self, args: Arc<Value>, cx: ToolContext) -> BoxFuture<'static, BodyOutcome> {
        let violations = self.input.violations(&args, "arguments");
        if !violations.is_empty() {
            let err = ToolError::invalid_args(&violations);
            return Box::pin(async move { BodyOutcome::Failed(err) });
        }
        let typed = match Self::typed_args(&args) {
            Ok(typed) => typed,
            Err(detail) => {
                let err = ToolError::invalid_args(&[detail]);
                return Box::pin(async move { BodyOutcome::Failed(err) });
            }
        };
        let tool = Arc::clone(&self.tool);
        Box::pin(async move {
            match tool.call(typed, cx).await {
                Ok(output) => match to_lossless_value(&output) {
                    Ok(value) => BodyOutcome::Value(value),
                    Err(err) => BodyOutcome::Lossy(snapshot_detail(err)),
                },
                Err(err) => BodyOutcome::Failed(err),
            }
        })
    }

    fn project(&self, args: &Value, value: &Value, with_meta: bool) -> Result<Projection, String> {
        // Deserialized once, shared by both projections.
        let args = Self::typed_args(args).map_err(|e| format!("output.render failed: {e}"))?;
        let output =
            T::Output::deserialize(value).map_err(|e| format!("output.render failed: {e}"))?;
        let content = catch_unwind(AssertUnwindSafe(|| self.tool.render(&args, &output)))
            .map_err(|p| format!("output.render failed: {}", panic_message(p.as_ref())))?;
        if !with_meta {
            return Ok((content, None));
        }
        let meta = catch_unwind(AssertUnwindSafe(|| {
            self.tool.presentation_meta_from_value(&args, &output, value)
        }))
        .map_err(|p| format!("output.presentationMeta failed: {}", panic_message(p.as_ref())))?;
        Ok((content, meta))
    }
}

pub(crate) struct ErasedRaw {
    raw: RawTool,
    execute: Arc<RawBody>,
    render: Arc<RawRender>,
    input: CompiledSchema,
    output: CompiledSchema,
}

impl ErasedRaw {
    pub(crate) fn new(raw: RawTool) -> Result<Self, RegistrationError> {
        let name = raw.name.clone();
        let (Some(output_schema), Some(render)) = (raw.output_schema.clone(), raw.render.clone())
        else {
            return Err(RegistrationError::MissingOutput(name));
        };
        let execute =
            raw.execute.clone().ok_or_else(|| RegistrationError::MissingOutput(name.clone()))?;
        validate_timeout(&name, raw.timeout)?;
        // A raw tool's schemas (an MCP server's, say) are published too: standard terms as well.
        let input = CompiledSchema::compile(
            &name,
            "inputSchema",
            standardize(
                raw.input_schema.clone().unwrap_or_else(|| serde_json::json!({"type": "object"})),
            ),
        )?;
        let output = CompiledSchema::compile(&name, "outputSchema", standardize(output_schema))?;
        Ok(ErasedRaw { raw, execute, render, input, output })
    }
}

impl ErasedTool for ErasedRaw {
    fn name(&self) -> &str {
        &self.raw.name
    }

    fn description(&self) -> String {
        self.raw.description.clone()
    }

    fn input_schema(&self) -> &CompiledSchema {
        &self.input
    }

    fn output_schema(&self) -> &CompiledSchema {
        &self.output
    }

    fn timeout(&self) -> Option<Duration> {
        self.raw.timeout
    }

    fn concurrency_safe(&self, args: &Value) -> bool {
        match &self.raw.concurrency_safe {
            Some(safe) => catch_unwind(AssertUnwindSafe(|| safe(args))).unwrap_or(false),
            None => false,
        }
    }

    fn renderer_version(&self) -> u32 {
        self.raw.renderer_version
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        match &self.raw.present_call {
            Some(present) => catch_unwind(AssertUnwindSafe(|| present(args)))
                .unwrap_or_else(|_| CallPresentation::generic(&self.raw.name)),
            None => CallPresentation::generic(&self.raw.name),
        }
    }

    fn annotations(&self) -> ToolAnnotations {
        self.raw.annotations
    }

    fn changes_only_through_workspace(&self) -> bool {
        false
    }

    fn internal(&self) -> bool {
        false
    }

    fn spill_mode(&self) -> SpillMode {
        self.raw.spill_mode
    }

    fn spill_over(&self, _args: &Value, _value: &Value) -> Option<OwnSpill> {
        None
    }

    fn invoke(&self, args: Arc<Value>, cx: ToolContext) -> BoxFuture<'static, BodyOutcome> {
        if self.raw.validate_args {
            let violations = self.input.violations(&args, "arguments");
            if !violations.is_empty() {
                let err = ToolError::invalid_args(&violations);
                return Box::pin(async move { BodyOutcome::Failed(err) });
            }
        }
        let execute = Arc::clone(&self.execute);
        let args = (*args).clone();
        Box::pin(async move {
            match execute(args, cx).await {
                Ok(value) => match lossless_value(&value) {
                    Ok(()) => BodyOutcome::Value(value),
                    Err(err) => BodyOutcome::Lossy(snapshot_detail(err)),
                },
                Err(err) => BodyOutcome::Failed(err),
            }
        })
    }

    fn project(&self, args: &Value, value: &Value, with_meta: bool) -> Result<Projection, String> {
        let content = catch_unwind(AssertUnwindSafe(|| (self.render)(args, value)))
            .map_err(|p| format!("output.render failed: {}", panic_message(p.as_ref())))?;
        let meta = match (&self.raw.presentation_meta, with_meta) {
            (Some(meta), true) => {
                catch_unwind(AssertUnwindSafe(|| meta(args, value))).map_err(|p| {
                    format!("output.presentationMeta failed: {}", panic_message(p.as_ref()))
                })?
            }
            _ => None,
        };
        Ok((content, meta))
    }
}
