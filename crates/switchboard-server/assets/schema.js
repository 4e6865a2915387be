// JSON Schema checks for tool arguments, before they are sent: the parts of draft 2020-12
// (and draft-07, which many servers still emit) that tool input schemas use. An unknown
// keyword is ignored, never a reason to refuse: the server has the last word.
//
// Schemas come from servers, which may be hostile: every walk is bounded in depth and in
// steps, so `$ref` cycles (`{"allOf": [{"$ref": "#"}, {"$ref": "#"}]}`) and wide
// self-references end. A check that runs out of steps stops, says so (`errors.incomplete`),
// and refuses nothing more; a skeleton that runs out of room leaves the rest empty.

const MAX_DEPTH = 64;
/** Schema nodes one validation may visit. */
export const MAX_STEPS = 20000;
/** Values one skeleton may build. */
export const MAX_SKELETON_NODES = 500;

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value; // "string" | "boolean" | "object"
}

function typeMatches(value, type) {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
}

function describe(value) {
  const s = JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 40 ? s.slice(0, 37) + "…" : s;
}

function resolveRef(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  let node = root;
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (node === null || typeof node !== "object" || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

function equal(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Checks `value` against `schema`. Returns a list of `{path, message}`, empty when valid.
 * `path` is a JSON pointer into the value (`/items/0/name`), "" for the whole.
 */
export function validate(schema, value) {
  const errors = [];
  const budget = { steps: MAX_STEPS };
  check(schema, value, "", schema, errors, 0, budget);
  if (budget.steps <= 0) errors.incomplete = true;
  return errors;
}

function check(schema, value, path, root, errors, depth, budget) {
  if (--budget.steps <= 0) return;
  if (schema === true || schema === undefined || schema === null) return;
  if (schema === false) {
    errors.push({ path, message: "no value is allowed here" });
    return;
  }
  if (typeof schema !== "object" || depth > MAX_DEPTH) return;
  const at = (message) => errors.push({ path, message });

  if (schema.$ref !== undefined) {
    const target = resolveRef(root, schema.$ref);
    if (target !== undefined) check(target, value, path, root, errors, depth + 1, budget);
  }

  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => typeMatches(value, t))) {
      at(`expected ${types.join(" or ")}, got ${typeOf(value)} ${describe(value)}`);
      return; // the other keywords would only repeat it
    }
  }
  if (schema.const !== undefined && !equal(schema.const, value)) at(`must be ${describe(schema.const)}`);
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, value))) {
    at(`must be one of ${schema.enum.map(describe).join(", ")}`);
  }

  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) at(`must be ≥ ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) at(`must be ≤ ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
      at(`must be > ${schema.exclusiveMinimum}`);
    }
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
      at(`must be < ${schema.exclusiveMaximum}`);
    }
    if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
      const q = value / schema.multipleOf;
      if (Math.abs(q - Math.round(q)) > 1e-9) at(`must be a multiple of ${schema.multipleOf}`);
    }
  }

  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof schema.minLength === "number" && length < schema.minLength) {
      at(`must be at least ${schema.minLength} characters`);
    }
    if (typeof schema.maxLength === "number" && length > schema.maxLength) {
      at(`must be at most ${schema.maxLength} characters`);
    }
    if (typeof schema.pattern === "string") {
      try {
        if (!new RegExp(schema.pattern, "u").test(value)) at(`must match /${schema.pattern}/`);
      } catch {
        // A pattern this browser cannot compile: leave it to the server.
      }
    }
  }

  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) {
      at(`needs at least ${schema.minItems} items`);
    }
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
      at(`takes at most ${schema.maxItems} items`);
    }
    if (schema.uniqueItems === true) {
      const seen = new Set(value.map((v) => JSON.stringify(v)));
      if (seen.size !== value.length) at("items must be unique");
    }
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
    value.forEach((item, i) => {
      const itemSchema = i < prefix.length ? prefix[i] : Array.isArray(schema.items) ? schema.additionalItems : schema.items;
      check(itemSchema, item, `${path}/${i}`, root, errors, depth + 1, budget);
    });
  }

  if (typeOf(value) === "object") {
    const props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
    if (Array.isArray(schema.required)) {
      for (const name of schema.required) {
        if (!(name in value)) errors.push({ path: `${path}/${name}`, message: "is required" });
      }
    }
    const keys = Object.keys(value);
    if (typeof schema.minProperties === "number" && keys.length < schema.minProperties) {
      at(`needs at least ${schema.minProperties} properties`);
    }
    if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties) {
      at(`takes at most ${schema.maxProperties} properties`);
    }
    const patterns = [];
    if (schema.patternProperties && typeof schema.patternProperties === "object") {
      for (const [p, s] of Object.entries(schema.patternProperties)) {
        try {
          patterns.push([new RegExp(p, "u"), s]);
        } catch {
          // ignored, as above
        }
      }
    }
    for (const key of keys) {
      const child = `${path}/${key}`;
      let matched = false;
      if (Object.hasOwn(props, key)) {
        matched = true;
        check(props[key], value[key], child, root, errors, depth + 1, budget);
      }
      for (const [re, s] of patterns) {
        if (re.test(key)) {
          matched = true;
          check(s, value[key], child, root, errors, depth + 1, budget);
        }
      }
      if (!matched && schema.additionalProperties !== undefined) {
        if (schema.additionalProperties === false) {
          errors.push({ path: child, message: "is not a known property" });
        } else {
          check(schema.additionalProperties, value[key], child, root, errors, depth + 1, budget);
        }
      }
    }
  }

  if (Array.isArray(schema.allOf)) {
    for (const s of schema.allOf) check(s, value, path, root, errors, depth + 1, budget);
  }
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0) {
    const ok = schema.anyOf.some((s) => validateAt(s, value, root, depth, budget).length === 0);
    if (!ok) at("matches none of the allowed forms (anyOf)");
  }
  if (Array.isArray(schema.oneOf) && schema.oneOf.length > 0) {
    const n = schema.oneOf.filter((s) => validateAt(s, value, root, depth, budget).length === 0).length;
    if (n !== 1) at(n === 0 ? "matches none of the allowed forms (oneOf)" : "matches more than one form (oneOf)");
  }
  if (schema.not !== undefined && validateAt(schema.not, value, root, depth, budget).length === 0) {
    at("matches a form that is not allowed (not)");
  }
}

function validateAt(schema, value, root, depth, budget) {
  const errors = [];
  check(schema, value, "", root, errors, depth + 1, budget);
  return errors;
}

/**
 * A starting value for the arguments: every required property with its default, first
 * example, first enum value, or an empty value of its type.
 */
export function skeleton(schema, root = schema, depth = 0, room = { nodes: MAX_SKELETON_NODES }) {
  if (!schema || typeof schema !== "object" || depth > 8 || --room.nodes <= 0) return null;
  if (schema.$ref !== undefined) return skeleton(resolveRef(root, schema.$ref), root, depth + 1, room);
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      return "";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 0;
    case "boolean":
      return false;
    case "array":
      return [];
    case "null":
      return null;
    default: {
      const out = {};
      const props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
      for (const name of Array.isArray(schema.required) ? schema.required : []) {
        if (room.nodes <= 0) break;
        out[name] = skeleton(props[name], root, depth + 1, room);
      }
      return out;
    }
  }
}
