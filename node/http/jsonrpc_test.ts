import { deepStrictEqual, strictEqual } from "node:assert";
import {
  handleJsonRpc,
  InternalError,
  InvalidParamsError,
  InvalidRequestError,
  JsonRpcError,
  type JsonRpcMethods,
  MethodNotFoundError,
  ParseError,
} from "./jsonrpc.ts";

const calls: string[] = [];
const methods: JsonRpcMethods = {
  subtract: (params) => {
    if (Array.isArray(params) && params.length === 2) {
      return params[0] - params[1];
    }
    const p = params as { minuend?: unknown; subtrahend?: unknown } | undefined;
    if (typeof p?.minuend === "number" && typeof p.subtrahend === "number") {
      return p.minuend - p.subtrahend;
    }
    throw new InvalidParamsError(
      "subtract needs [a, b] or {minuend, subtrahend}",
    );
  },
  sum: (params) => (params as number[]).reduce((a, b) => a + b, 0),
  echo: async (params) => {
    await Promise.resolve();
    return params;
  },
  nothing: () => undefined,
  notify: (params) => {
    calls.push(JSON.stringify(params));
  },
  boom: () => {
    throw new Error("secret /home/user/key.pem at line 42");
  },
  custom: () => {
    throw new JsonRpcError(-32001, "Round not started", { round: 3 });
  },
  bigint: () => 1n,
};

async function rpc(
  body: string,
  m: JsonRpcMethods = methods,
): Promise<unknown> {
  const out = await handleJsonRpc(body, m);
  return out === null ? null : JSON.parse(out);
}

function err(id: unknown, code: number, message: string) {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

Deno.test("error classes carry their codes", () => {
  const cases: [JsonRpcError, number, string][] = [
    [new ParseError(), -32700, "ParseError"],
    [new InvalidRequestError(), -32600, "InvalidRequestError"],
    [new MethodNotFoundError(), -32601, "MethodNotFoundError"],
    [new InvalidParamsError(), -32602, "InvalidParamsError"],
    [new InternalError(), -32603, "InternalError"],
  ];
  for (const [error, code, name] of cases) {
    strictEqual(error.code, code);
    strictEqual(error.name, name);
    strictEqual(error instanceof JsonRpcError, true);
    strictEqual(error instanceof Error, true);
  }
  deepStrictEqual(new JsonRpcError(-1, "m", { a: 1 }).toErrorObject(), {
    code: -1,
    message: "m",
    data: { a: 1 },
  });
  deepStrictEqual(new InvalidParamsError("bad").toErrorObject(), {
    code: -32602,
    message: "bad",
  });
});

Deno.test("call with positional and named params", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}'),
    {
      jsonrpc: "2.0",
      id: 1,
      result: 19,
    },
  );
  deepStrictEqual(
    await rpc(
      '{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":"a"}',
    ),
    { jsonrpc: "2.0", id: "a", result: 19 },
  );
});

Deno.test("id null is echoed as null and answered", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":null}'),
    {
      jsonrpc: "2.0",
      id: null,
      result: 3,
    },
  );
});

Deno.test("absent params reach the handler as undefined; undefined result becomes null", async () => {
  deepStrictEqual(await rpc('{"jsonrpc":"2.0","method":"echo","id":7}'), {
    jsonrpc: "2.0",
    id: 7,
    result: null,
  });
  const out = await handleJsonRpc(
    '{"jsonrpc":"2.0","method":"nothing","id":8}',
    methods,
  );
  strictEqual(out, '{"jsonrpc":"2.0","id":8,"result":null}');
});

Deno.test("notification runs the handler and returns null", async () => {
  calls.length = 0;
  strictEqual(
    await handleJsonRpc(
      '{"jsonrpc":"2.0","method":"notify","params":[5]}',
      methods,
    ),
    null,
  );
  deepStrictEqual(calls, ["[5]"]);
});

Deno.test("notification gets no response even on error", async () => {
  strictEqual(
    await handleJsonRpc('{"jsonrpc":"2.0","method":"missing"}', methods),
    null,
  );
  strictEqual(
    await handleJsonRpc('{"jsonrpc":"2.0","method":"boom"}', methods),
    null,
  );
  strictEqual(
    await handleJsonRpc(
      '{"jsonrpc":"2.0","method":"subtract","params":{}}',
      methods,
    ),
    null,
  );
});

Deno.test("-32700 parse error has id null", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]'),
    err(null, -32700, "Parse error"),
  );
  deepStrictEqual(await rpc(""), err(null, -32700, "Parse error"));
  deepStrictEqual(
    await rpc(
      '[{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":"1"},{"jsonrpc":"2.0"',
    ),
    err(null, -32700, "Parse error"),
  );
});

Deno.test("-32601 method not found, including Object.prototype names", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"foobar","id":"1"}'),
    err("1", -32601, "Method not found: foobar"),
  );
  for (
    const name of ["toString", "__proto__", "constructor", "hasOwnProperty"]
  ) {
    deepStrictEqual(
      await rpc(JSON.stringify({ jsonrpc: "2.0", method: name, id: 2 })),
      err(2, -32601, `Method not found: ${name}`),
    );
  }
});

Deno.test("-32602 thrown by a handler keeps its message", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"subtract","params":["x"],"id":3}'),
    err(3, -32602, "subtract needs [a, b] or {minuend, subtrahend}"),
  );
});

Deno.test("custom JsonRpcError codes and data pass through", async () => {
  deepStrictEqual(await rpc('{"jsonrpc":"2.0","method":"custom","id":4}'), {
    jsonrpc: "2.0",
    id: 4,
    error: { code: -32001, message: "Round not started", data: { round: 3 } },
  });
});

Deno.test("-32603 for a generic Error, without leaking its message", async () => {
  const seen: unknown[] = [];
  const out = await handleJsonRpc(
    '{"jsonrpc":"2.0","method":"boom","id":5}',
    methods,
    {
      onInternalError: (error, method) =>
        seen.push(method, (error as Error).message),
    },
  );
  deepStrictEqual(JSON.parse(out!), err(5, -32603, "Internal error"));
  strictEqual(out!.includes("secret"), false);
  strictEqual(out!.includes("stack"), false);
  deepStrictEqual(seen, ["boom", "secret /home/user/key.pem at line 42"]);
});

Deno.test("-32603 when the result cannot be serialized", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":"bigint","id":6}'),
    err(6, -32603, "Internal error"),
  );
});

Deno.test("-32600 for a bad jsonrpc version", async () => {
  for (const version of ['"1.0"', '"2"', "2.0", "null"]) {
    deepStrictEqual(
      await rpc(`{"jsonrpc":${version},"method":"sum","params":[1],"id":1}`),
      err(1, -32600, 'jsonrpc must be exactly "2.0"'),
    );
  }
  deepStrictEqual(
    await rpc('{"method":"sum","params":[1],"id":1}'),
    err(1, -32600, 'jsonrpc must be exactly "2.0"'),
  );
});

Deno.test("-32600 for a non-string method, answered even without id", async () => {
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","method":1,"params":"bar"}'),
    err(null, -32600, "method must be a string"),
  );
  deepStrictEqual(
    await rpc('{"jsonrpc":"2.0","params":[],"id":9}'),
    err(9, -32600, "method must be a string"),
  );
});

Deno.test("-32600 for params that are not an array or object", async () => {
  for (const params of ['"bar"', "1", "true", "null"]) {
    deepStrictEqual(
      await rpc(`{"jsonrpc":"2.0","method":"echo","params":${params},"id":10}`),
      err(10, -32600, "params must be an array or an object"),
    );
  }
});

Deno.test("-32600 for an id that is not string, number or null", async () => {
  for (const id of ["{}", "[1]", "true"]) {
    deepStrictEqual(
      await rpc(`{"jsonrpc":"2.0","method":"sum","params":[1],"id":${id}}`),
      err(null, -32600, "id must be a string, number or null"),
    );
  }
});

Deno.test("-32600 for a body that is not an object", async () => {
  for (const body of ["1", '"x"', "null", "true"]) {
    deepStrictEqual(
      await rpc(body),
      err(null, -32600, "Request must be an object"),
    );
  }
});

Deno.test("empty batch is one -32600 object, not an array", async () => {
  deepStrictEqual(await rpc("[]"), err(null, -32600, "Empty batch"));
});

Deno.test("batch of invalid entries gets one -32600 each", async () => {
  deepStrictEqual(await rpc("[1,2,3]"), [
    err(null, -32600, "Request must be an object"),
    err(null, -32600, "Request must be an object"),
    err(null, -32600, "Request must be an object"),
  ]);
  deepStrictEqual(await rpc("[1]"), [
    err(null, -32600, "Request must be an object"),
  ]);
});

Deno.test("batch mixing valid, invalid and notifications keeps order", async () => {
  calls.length = 0;
  const body = JSON.stringify([
    { jsonrpc: "2.0", method: "sum", params: [1, 2, 4], id: "1" },
    { jsonrpc: "2.0", method: "notify", params: [7] },
    { jsonrpc: "2.0", method: "subtract", params: [42, 23], id: "2" },
    { foo: "boo" },
    { jsonrpc: "2.0", method: "foo.get", params: { name: "myself" }, id: "5" },
    { jsonrpc: "2.0", method: "boom", id: "9" },
    { jsonrpc: "2.0", method: "missing" },
    { jsonrpc: "1.0", method: "sum", params: [1], id: "10" },
  ]);
  deepStrictEqual(await rpc(body), [
    { jsonrpc: "2.0", id: "1", result: 7 },
    { jsonrpc: "2.0", id: "2", result: 19 },
    err(null, -32600, 'jsonrpc must be exactly "2.0"'),
    err("5", -32601, "Method not found: foo.get"),
    err("9", -32603, "Internal error"),
    err("10", -32600, 'jsonrpc must be exactly "2.0"'),
  ]);
  deepStrictEqual(calls, ["[7]"]);
});

Deno.test("batch of only notifications returns null", async () => {
  calls.length = 0;
  const body = JSON.stringify([
    { jsonrpc: "2.0", method: "notify", params: [1, 2, 4] },
    { jsonrpc: "2.0", method: "notify", params: [7] },
    { jsonrpc: "2.0", method: "missing" },
  ]);
  strictEqual(await handleJsonRpc(body, methods), null);
  deepStrictEqual(calls, ["[1,2,4]", "[7]"]);
});

Deno.test("batch longer than the cap is refused whole before running anything", async () => {
  calls.length = 0;
  const request = { jsonrpc: "2.0", method: "notify", params: [1] };
  const body = JSON.stringify(Array.from({ length: 101 }, () => request));
  deepStrictEqual(
    await rpc(body),
    err(null, -32600, "Batch too long: got 101 requests, the limit is 100"),
  );
  deepStrictEqual(calls, []);

  const atCap = JSON.stringify(
    Array.from(
      { length: 100 },
      (_, i) => ({ jsonrpc: "2.0", method: "sum", params: [i], id: i }),
    ),
  );
  const out = await rpc(atCap) as { id: number; result: number }[];
  strictEqual(out.length, 100);
  deepStrictEqual(out[99], { jsonrpc: "2.0", id: 99, result: 99 });

  const small = await handleJsonRpc(
    JSON.stringify([request, request, request]),
    methods,
    { maxBatchLength: 2 },
  );
  deepStrictEqual(
    JSON.parse(small!),
    err(null, -32600, "Batch too long: got 3 requests, the limit is 2"),
  );
});
