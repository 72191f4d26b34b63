import { notesCases } from "./_state_notes_cases.ts";
import { fileNotes, memoryNotes } from "./state_notes.ts";

notesCases("memory notes", () => Promise.resolve(memoryNotes()));
notesCases("file notes", (dir) => Promise.resolve(fileNotes(`${dir}/jobs/j`)));
