// Uses the generated TypeScript (buf.gen.yaml: protoc-gen-es) as an integrator would: a request
// of each game built and serialised, every service's descriptor and its methods named. Compiled
// by `make proto-ts` (tsc --noEmit): a proto change that breaks the generated code fails there.
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { TableService, OpenTableRequestSchema } from "./gen/sabot/v1/table_pb.js";
import { RegulatorService, ReplayRoundRequestSchema } from "./gen/sabot/v1/regulator_pb.js";
import { TreintaYUnaService, OpenRoundRequestSchema } from "./gen/sabot/treinta_y_una/v1/treinta_y_una_pb.js";
import { CuarentaService, PlayCardRequestSchema } from "./gen/sabot/cuarenta/v1/cuarenta_pb.js";

const round = create(OpenRoundRequestSchema, {
  requestId: "4f0c…",
  parent: "tables/tyu-1",
  seats: ["accounts/anne", "accounts/bruno"],
  bank: { currencyCode: "EUR", amountMinor: 20000n },
});
const play = create(PlayCardRequestSchema, { match: "tables/cu-1/matches/x", seat: 0, card: "5H", capture: ["5C"] });
const table = create(OpenTableRequestSchema, { tableId: "cu-1", game: "cuarenta" });
const replay = create(ReplayRoundRequestSchema, { name: "tables/tyu-1/rounds/x", differencesOnly: true });
const again = fromBinary(OpenRoundRequestSchema, toBinary(OpenRoundRequestSchema, round));
const services = [TableService, RegulatorService, TreintaYUnaService, CuarentaService];
const methods: string[] = services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));
export const checked: [string, number, string, boolean, number] = [
  again.parent, play.seat, table.game, replay.differencesOnly, methods.length,
];
