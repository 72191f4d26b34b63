/**
 * A one-node ONNX model for the matmul benchmark, encoded by hand: the
 * protobuf wire format needs only varints and length-delimited fields, so
 * no ONNX tooling is required.
 *
 * The plain layout is `MatMul(A [m,k], B [k,n]) -> Y [m,n]`; the transposed
 * one is `Gemm(A [m,k], B [n,k], transB=1) -> Y [m,n]`. Both operands are
 * graph inputs, fed on every run, as our backend and tfjs take them.
 *
 * Field numbers are those of onnx.proto (IR version 8, opset 13).
 *
 * @module
 */

/** Writes protobuf fields into a growing byte list. */
class ProtoWriter {
  readonly #bytes: number[] = [];

  #varint(value: number): this {
    while (value > 0x7f) {
      this.#bytes.push((value & 0x7f) | 0x80);
      value = Math.floor(value / 128);
    }
    this.#bytes.push(value);
    return this;
  }

  /** An int64/int32/enum field (wire type 0). */
  int(field: number, value: number): this {
    return this.#varint(field * 8).#varint(value);
  }

  /** A bytes or embedded-message field (wire type 2). */
  bytes(field: number, value: Uint8Array): this {
    this.#varint(field * 8 + 2).#varint(value.length);
    for (const byte of value) this.#bytes.push(byte);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    return new Uint8Array(this.#bytes);
  }
}

/** TensorProto.DataType FLOAT. */
const FLOAT = 1;
/** AttributeProto.AttributeType INT. */
const ATTRIBUTE_INT = 2;

/** ValueInfoProto of a float tensor with fixed dims. */
function floatInput(name: string, dims: readonly number[]): ProtoWriter {
  const shape = new ProtoWriter();
  for (const dim of dims) shape.message(1, new ProtoWriter().int(1, dim));
  const tensorType = new ProtoWriter().int(1, FLOAT).message(2, shape);
  return new ProtoWriter()
    .string(1, name)
    .message(2, new ProtoWriter().message(1, tensorType));
}

/**
 * The model bytes for Y [m,n] = A [m,k] @ B, with B stored [k,n], or [n,k]
 * when `transB` (then the node is a Gemm with transB=1).
 */
export function matmulModel(
  m: number,
  k: number,
  n: number,
  transB: boolean,
): Uint8Array {
  const node = new ProtoWriter()
    .string(1, "A")
    .string(1, "B")
    .string(2, "Y")
    .string(3, "product")
    .string(4, transB ? "Gemm" : "MatMul");
  if (transB) {
    node.message(
      5,
      new ProtoWriter().string(1, "transB").int(3, 1).int(20, ATTRIBUTE_INT),
    );
  }
  const graph = new ProtoWriter()
    .message(1, node)
    .string(2, "matmul")
    .message(11, floatInput("A", [m, k]))
    .message(11, floatInput("B", transB ? [n, k] : [k, n]))
    .message(12, floatInput("Y", [m, n]));
  return new ProtoWriter()
    .int(1, 8) // ir_version
    .string(2, "zoo-node bench")
    .message(7, graph)
    .message(8, new ProtoWriter().string(1, "").int(2, 13)) // opset_import
    .finish();
}
