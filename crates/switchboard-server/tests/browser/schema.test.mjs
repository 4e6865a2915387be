// The dashboard's schema checks (assets/schema.js), run with `node --test` by tests/browser.rs.
import { test } from "node:test";
import { strict as assert } from "node:assert";
import { skeleton, validate } from "../../assets/schema.js";

const paths = (schema, value) => validate(schema, value).map((e) => `${e.path} ${e.message}`);

test("types, with integer a kind of number", () => {
  assert.deepEqual(paths({ type: "number" }, 3), []);
  assert.deepEqual(paths({ type: "integer" }, 3.5), [" expected integer, got number 3.5"]);
  assert.deepEqual(paths({ type: ["string", "null"] }, null), []);
  assert.equal(paths({ type: "object" }, []).length, 1);
});

test("required, properties, additionalProperties, nested paths", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "number" }, b: {}, tags: { type: "array", items: { type: "string", minLength: 2 } } },
    required: ["a", "b"],
    additionalProperties: false,
  };
  assert.deepEqual(paths(schema, { a: "x", tags: ["ok", "n"], extra: 1 }), [
    "/b is required",
    '/a expected number, got string "x"',
    "/tags/1 must be at least 2 characters",
    "/extra is not a known property",
  ]);
  assert.deepEqual(paths(schema, { a: 1, b: null, tags: [] }), []);
});

test("enum, const, bounds, pattern, items counts, uniqueness", () => {
  assert.equal(paths({ enum: ["tools", "prompts"] }, "x").length, 1);
  assert.equal(paths({ const: 3 }, 3).length, 0);
  assert.deepEqual(paths({ minimum: 1, maximum: 3 }, 4), [" must be ≤ 3"]);
  assert.equal(paths({ exclusiveMinimum: 0 }, 0).length, 1);
  assert.equal(paths({ multipleOf: 0.5 }, 1.5).length, 0);
  assert.equal(paths({ pattern: "^[a-z]+$" }, "abc1").length, 1);
  assert.equal(paths({ pattern: "(" }, "x").length, 0, "a pattern that does not compile is left to the server");
  assert.equal(paths({ minItems: 2 }, [1]).length, 1);
  assert.equal(paths({ uniqueItems: true }, [1, 1]).length, 1);
});

test("$ref into $defs and definitions, anyOf, oneOf, allOf, not", () => {
  const schema = {
    $defs: { name: { type: "string", minLength: 1 } },
    definitions: { n: { type: "integer" } },
    type: "object",
    properties: { who: { $ref: "#/$defs/name" }, n: { $ref: "#/definitions/n" } },
  };
  assert.deepEqual(paths(schema, { who: "", n: 1.5 }), ["/who must be at least 1 characters", "/n expected integer, got number 1.5"]);
  assert.equal(paths({ anyOf: [{ type: "string" }, { type: "number" }] }, true).length, 1);
  assert.equal(paths({ oneOf: [{ type: "number" }, { type: "integer" }] }, 2).length, 1, "2 matches both");
  assert.equal(paths({ allOf: [{ minimum: 1 }, { maximum: 2 }] }, 3).length, 1);
  assert.equal(paths({ not: { type: "string" } }, "x").length, 1);
  const loop = { $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" };
  assert.deepEqual(paths(loop, 1), [], "a $ref loop ends");
});

test("unknown keywords and empty schemas accept anything", () => {
  assert.deepEqual(paths({}, { anything: [1, 2] }), []);
  assert.deepEqual(paths({ "x-vendor": 1, format: "uri" }, "not a uri"), []);
  assert.deepEqual(paths(true, 1), []);
  assert.equal(paths(false, 1).length, 1);
});

test("a skeleton fills required properties from defaults, examples, enums and types", () => {
  const schema = {
    type: "object",
    properties: {
      text: { type: "string" },
      n: { type: "integer", minimum: 1 },
      mode: { enum: ["fast", "slow"] },
      when: { type: "string", default: "now" },
      tags: { type: "array" },
      opt: { type: "string" },
      sub: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
    },
    required: ["text", "n", "mode", "when", "tags", "sub"],
  };
  assert.deepEqual(skeleton(schema), { text: "", n: 1, mode: "fast", when: "now", tags: [], sub: { ok: false } });
  assert.deepEqual(skeleton({}), {});
  assert.deepEqual(validate(schema, skeleton(schema)), [], "the skeleton itself is valid");
});

test("hostile schemas end: $ref and allOf cycles, wide self-references, depth", () => {
  const started = Date.now();
  // allOf of two self-references: 2^64 paths without a bound.
  const cycle = { allOf: [{ $ref: "#" }, { $ref: "#" }] };
  const errors = validate(cycle, { a: 1 });
  assert.equal(errors.incomplete, true, "the check says it stopped");
  assert.deepEqual([...errors], [], "and refuses nothing it did not see");
  // 40 required self-references: 40^8 values without a bound.
  const wide = { type: "object", required: [], properties: {} };
  for (let i = 0; i < 40; i++) {
    wide.required.push(`p${i}`);
    wide.properties[`p${i}`] = { $ref: "#" };
  }
  const value = skeleton(wide);
  const size = JSON.stringify(value).length;
  assert.ok(size < 200000, `skeleton of ${size} characters`);
  assert.ok(Array.isArray(validate(wide, value)));
  // anyOf / oneOf / not of self-references share the same budget.
  assert.equal(validate({ anyOf: [{ $ref: "#" }, { $ref: "#" }], oneOf: [{ $ref: "#" }], not: { $ref: "#" } }, 1).incomplete, true);
  // A plain deep schema is checked whole.
  let deep = { type: "string" };
  for (let i = 0; i < 50; i++) deep = { type: "object", properties: { x: deep }, required: ["x"] };
  const deepErrors = validate(deep, {});
  assert.equal(deepErrors.incomplete, undefined);
  assert.equal(deepErrors.length, 1);
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
});
