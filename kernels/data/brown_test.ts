import assert from "node:assert/strict";
import { brownToText } from "./brown.ts";

// The real first lines of ca01 (blank lines and the leading tab included).
const CA01_HEAD =
  "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl " +
  "said/vbd Friday/nr an/at investigation/nn of/in Atlanta's/np$ recent/jj " +
  "primary/nn election/nn produced/vbd ``/`` no/at evidence/nn ''/'' that/cs " +
  "any/dti irregularities/nns took/vbd place/nn ./.\n\n\n" +
  "\tThe/at jury/nn further/rbr said/vbd in/in term-end/nn presentments/nns " +
  "that/cs the/at City/nn-tl Executive/jj-tl Committee/nn-tl ,/, which/wdt " +
  "had/hvd over-all/jj charge/nn of/in the/at election/nn ,/, ``/`` " +
  "deserves/vbz the/at praise/nn and/cc thanks/nns of/in the/at City/nn-tl " +
  "of/in-tl Atlanta/np-tl ''/'' for/in the/at manner/nn in/in which/wdt " +
  "the/at election/nn was/bedz conducted/vbn ./.\n\n\n";

Deno.test("brownToText: the first sentences of ca01", () => {
  assert.equal(
    brownToText([["ca01", CA01_HEAD]]),
    `The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "no evidence" that any irregularities took place.\n` +
      `The jury further said in term-end presentments that the City Executive Committee, which had over-all charge of the election, "deserves the praise and thanks of the City of Atlanta" for the manner in which the election was conducted.\n`,
  );
});

Deno.test("brownToText: tags go after the last slash only", () => {
  assert.equal(
    brownToText([["cb01", "\tand/or/cc 1/2/cd //in AAb//nn x/y/z/nn ./.\n"]]),
    "and/or 1/2 / AAb/ x/y/z.\n",
  );
});

Deno.test("brownToText: punctuation, brackets, clitics and quotes", () => {
  const src = "\tWe/ppss said/vbd :/: (/( 1/cd )/) yes/rb ;/. no/rb ?/. " +
    "Ca/md n't/* stop/vb ,/, it/pps 's/bez fine/jj !/. " +
    "He/pps said/vbd ,/, '/' Go/vb ,/, man/nn '/' --/-- and/cc left/vbd ./.\n";
  assert.equal(
    brownToText([["cc01", src]]),
    "We said: (1) yes; no? Can't stop, it's fine! He said, 'Go, man' -- and left.\n",
  );
});

Deno.test("brownToText: an abbreviation's period ends the sentence", () => {
  assert.equal(
    brownToText([[
      "ca03",
      "\tWon/vbn by/in Ivan/np Allen/np Jr./np ./. In/in D.C./np ,/, etc./rb ./.\n",
    ]]),
    "Won by Ivan Allen Jr. In D.C., etc.\n",
  );
});

Deno.test("brownToText: the corpus's doubled ; ? ! become single", () => {
  assert.equal(
    brownToText([[
      "ca04",
      "\tWhy/wrb ?/. ?/. See/vb (/( 6a/cd )/) ;/. ;/. go/vb !/. !/.\n",
    ]]),
    "Why? See (6a); go!\n",
  );
});

Deno.test("brownToText: sentences of a paragraph join, blank lines split paragraphs", () => {
  const src = "\n\n\tOne/cd ./.\nTwo/cd ./.\n\n\n\tThree/cd ./.\n\n";
  assert.equal(brownToText([["cd01", src]]), "One. Two.\nThree.\n");
});

Deno.test("brownToText: a headline is its own line", () => {
  const src = "\tFirst/od ./.\n\nMerger/nn-hl proposed/vbn-hl \n" +
    "However/wrb ,/, it/pps ended/vbd ./.\n" +
    "``/`` Must/md-hl solve/vb-hl problem/nn-hl ''/'' \n" +
    "\tLast/ap ./.\n";
  assert.equal(
    brownToText([["ca02", src]]),
    'First.\nMerger proposed\nHowever, it ended.\n"Must solve problem"\nLast.\n',
  );
});

Deno.test("brownToText: corpus files only, in sorted order, a blank line between", () => {
  const files: [string, string][] = [
    ["package/cr09", "\tLast/ap ./.\n"],
    ["README", "\tNot/* corpus/nn\n"],
    ["package/package.json", "{}"],
    ["CONTENTS", "ca01 ..."],
    ["cats.txt", "ca01 news"],
    ["cs01", "\tOut/rp of/in range/nn\n"],
    ["ca1", "\tToo/ql short/jj\n"],
    ["package/ca01", "\tFirst/od ./.\n\n\tSecond/od ./.\n"],
    ["cb10", "\tMiddle/jj ./.\n"],
  ];
  const expected = "First.\nSecond.\n\nMiddle.\n\nLast.\n";
  assert.equal(brownToText(files), expected);
  assert.equal(brownToText(files.toReversed()), expected);
  assert.equal(brownToText([]), "");
});

Deno.test("brownToText: CRLF input and odd whitespace", () => {
  assert.equal(
    brownToText([[
      "ce01",
      "\r\n\t  A/at  b/nn  ./.  \r\n\r\n \t \r\n\tC/np ./.\r\n",
    ]]),
    "A b.\nC.\n",
  );
});

Deno.test("brownToText: words that name Object properties stay words", () => {
  assert.equal(
    brownToText([["cf01", "\tconstructor/nn toString/nn __proto__/nn ./.\n"]]),
    "constructor toString __proto__.\n",
  );
});
