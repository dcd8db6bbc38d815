// The device code of guard_escape's routes that load an image at run time (cudaLibraryLoadData):
// hand-written PTX whose LAYOUT is the attack (issue 13, class 1), PTX that enters a function
// past its first instructions through an indirect call (class 2), and the SASS-only images
// (class 4) that tests/gpu/CMakeLists.txt embeds from escape_sass_kernel.cu.
//
// Every layout variant is the same module, header() + kernel() below, written out differently;
// ptxas treats a newline as ordinary whitespace, so each is a valid module with a kernel
// `escape_loaded(p, out)` that reads the u32 at p into out[0] and then stores 0x5A5A5A5A at p.
// A guard front end that ends a directive at the end of its line, or that reads the text in any
// other way than ptxas does, would not see (and not guard) that load and store.
// `guard_escape --image ROUTE` prints a route's image, e.g. to check it with `ptxas -arch=sm_90`.
#pragma once

#include <string>

namespace guard_escape_images {

inline std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

inline std::string oneLine(const std::string& text) { return replaceAll(text, "\n", " "); }

inline std::string header() { return ".version 9.0\n.target sm_90\n.address_size 64\n"; }

// The kernel every layout variant holds (1515870810 is 0x5A5A5A5A).
inline std::string kernel() {
  return R"(.visible .entry escape_loaded(
.param .u64 escape_loaded_p,
.param .u64 escape_loaded_out
)
{
.reg .b32 %r<3>;
.reg .b64 %rd<3>;
ld.param.u64 %rd1, [escape_loaded_p];
ld.param.u64 %rd2, [escape_loaded_out];
ld.global.u32 %r1, [%rd1];
st.global.u32 [%rd2], %r1;
mov.u32 %r2, 1515870810;
st.global.u32 [%rd1], %r2;
ret;
}
)";
}

// The whole module on one line: .version swallowing the rest of its line would swallow it all.
inline std::string oneLineModule() { return oneLine(header() + kernel()); }

// The kernel on the line of .target (.address_size on that line too, before it).
inline std::string afterTarget() {
  return ".version 9.0\n.target sm_90 .address_size 64 " + oneLine(kernel()) + "\n";
}

// The kernel on the line of .address_size.
inline std::string afterAddressSize() {
  return ".version 9.0\n.target sm_90\n.address_size 64 " + oneLine(kernel()) + "\n";
}

// The kernel on the line of a module-level .file directive.
inline std::string afterFile() { return header() + ".file 1 \"escape.cu\" " + oneLine(kernel()) + "\n"; }

// A comment marker inside a string, which ptxas reads as part of the string: `//` on the kernel's
// line (a front end that takes it for a comment drops the kernel) ...
inline std::string lineCommentInString() {
  return header() + ".file 1 \"escape.cu // \" " + oneLine(kernel()) + "\n";
}

// ... and `/*` in one string, `*/` in a later one, around the kernel.
inline std::string blockCommentInStrings() {
  return header() + ".file 1 \"escape/*.cu\"\n" + kernel() + ".file 2 \"*/\"\n";
}

// Each access on the line of a .loc directive, inside the body.
inline std::string afterLoc() {
  std::string body = replaceAll(kernel(), "ld.global", ".loc 1 7 1 ld.global");
  body = replaceAll(body, "st.global", ".loc 1 8 1 st.global");
  return header() + ".file 1 \"escape.cu\"\n" + body;
}

// The kernel on the closing line of a debug section.
inline std::string afterSection() {
  return header() + ".section .debug_abbrev { .b8 1 .b8 17 .b8 0 } " + oneLine(kernel()) + "\n";
}

// Each access on the line of a .pragma statement, inside the body.
inline std::string afterPragma() {
  std::string body = replaceAll(kernel(), "ld.global", ".pragma \"nounroll\"; ld.global");
  body = replaceAll(body, "st.global", ".pragma \"nounroll\"; st.global");
  return header() + body;
}

// Carriage returns alone end the lines: no '\n' anywhere.
inline std::string carriageReturns() { return replaceAll(header() + kernel(), "\n", "\r"); }

// Block comments spanning lines after every line, CRLF line ends, tabs, a line comment inside
// the operand lists and a block comment between an instruction and its address.
inline std::string commentsAndTabs() {
  std::string body = replaceAll(kernel(), "\n", " /* a\n comment */\t\r\n");
  body = replaceAll(body, " [", "\t/*[*/[");
  body = replaceAll(body, ", ", ",\r\n\t// c\n");
  // (.target and its architecture stay on one line: the worker reads the architecture of a PTX
  // image from that line before anything else, and would refuse the image without it.)
  return ".version 9.0 /* x\n y */ // c\r\n.target\tsm_90 // c\r\n.address_size /* z\n */\t64\r\n" + body;
}

// Class 2, the client's own function: escape_store_fn stores 0x5A5A5A5A at p and then computes
// its result in 48 dependent steps (a long tail, so that every entry point the sweep tries lies
// inside the function). escape_loaded(p, out, offset) reads the function's address from a table
// in memory and calls it + offset through a register: an entry past the guard's comparison of
// the store's address takes the caller's predicate, which the guard's check of the kernel's own
// last access (a store to out) left at "not protected", and stores to p. (Such an entry also
// skips the function's load of the global memory descriptor its store uses: the store then takes
// whatever the caller left in those uniform registers; whether sm_90 accepts that, only the GPU
// run shows.) Nothing of the kernel is used after the call.
inline std::string ownFunctionModule() {
  std::string tail;
  for (unsigned i = 1; i <= 48; ++i) {
    tail +=
        "mad.lo.u32 %r2, %r2, %r2, " + std::to_string((2654435769u ^ (i * 16777619u)) & 0x7FFFFFFFu) + ";\n";
  }
  return header() + R"(.func (.param .b32 escape_store_ret) escape_store_fn(
.param .b64 escape_store_p,
.param .b32 escape_store_seed
)
{
.reg .b32 %r<4>;
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [escape_store_p];
ld.param.u32 %r1, [escape_store_seed];
mov.u32 %r3, 1515870810;
st.global.u32 [%rd1], %r3;
mov.u32 %r2, %r1;
)" + tail +
         R"(st.param.b32 [escape_store_ret], %r2;
ret;
}
.global .align 8 .u64 escape_store_table[1] = {escape_store_fn};
.visible .entry escape_loaded(
.param .u64 escape_loaded_p,
.param .u64 escape_loaded_out,
.param .u32 escape_loaded_offset
)
{
.reg .b32 %r<6>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [escape_loaded_p];
ld.param.u64 %rd2, [escape_loaded_out];
ld.param.u32 %r1, [escape_loaded_offset];
mov.u64 %rd7, escape_store_table;
ld.global.u64 %rd3, [%rd7];
st.global.u32 [%rd2+4], %r1;
cvt.u64.u32 %rd4, %r1;
add.u64 %rd5, %rd3, %rd4;
{
.param .b64 param0;
st.param.b64 [param0], %rd1;
.param .b32 param1;
st.param.b32 [param1], %r1;
.param .b32 retval0;
escape_store_proto: .callprototype (.param .b32 _) _ (.param .b64 _, .param .b32 _);
call (retval0), %rd5, (param0, param1), escape_store_proto;
ld.param.b32 %r3, [retval0];
}
ret;
}
)";
}

// Class 2, trusted module code: a client admitted with kvstore. The placeholders are those of
// agileos/kvstore.h as nvcc emits them (the worker replaces their bodies with the module's trusted,
// unguarded code); agileos_kvstore_placeholders is the header's table of their addresses.
//   escape_put(out, key): agileos_kvstore_put(key, 0x5A5A5A5A5A5A5A5A) through the placeholder;
//     out[0] is its result (-38 where no module is linked).
//   escape_loaded(p, out, offset, fake): calls escape_call_get(get + offset, fake, p), which
//     calls its first argument through a register as get(fake, p). An entry past the module's
//     agileos_user_range_ok check skips the instructions that copy the arguments into the
//     registers the rest of the function uses (and its prologue), so the module code works on
//     what the caller left there. Before the call the kernel loads kTrustedCopies 64-bit copies of
//     p (volatile, through shared memory, which the guard leaves alone) into as many register
//     pairs at once and stores them back: afterwards those registers still hold p (the worker
//     compiles through cuLink; there ptxas 13.0 for sm_90 keeps get's value pointer in R32:R33 and
//     its key in R40:R41). The key is then p, which escape_put stored; an entry after the constant
//     call that returns the table takes `fake` (user memory, every entry {p + 1,
//     0x5A5A5A5A5A5A5A5A}) as the table. Either way the module stores the value at p. The
//     epilogue of get, whose prologue did not run, then restores the return address that
//     escape_call_get saved in the same place of its own 8-byte frame: get returns straight to the
//     kernel with its stack intact, so the client survives and the canary can be read.
// `viaTable`: the function's address is read from the placeholder table in memory instead of
// taken with mov.
constexpr int kTrustedCopies = 28;

inline std::string trustedBodyModule(bool viaTable) {
  const std::string placeholder = R"(.func (.param .b32 func_retval0) NAME(
.param .b64 NAME_param_0,
.param .b64 NAME_param_1
)
{
.reg .b32 %r<2>;
.reg .b64 %rd<2>;
mov.b64 %rd1, -38; // agileos module placeholder
cvt.u32.u64 %r1, %rd1;
st.param.b32 [func_retval0+0], %r1;
ret;
}
)";
  std::string text = header();
  text +=
      ".func (.param .b32 func_retval0) agileos_kvstore_put(.param .b64 agileos_kvstore_put_param_0, .param "
      ".b64 "
      "agileos_kvstore_put_param_1);\n";
  text +=
      ".func (.param .b32 func_retval0) agileos_kvstore_get(.param .b64 agileos_kvstore_get_param_0, .param "
      ".b64 "
      "agileos_kvstore_get_param_1);\n";
  text +=
      ".global .align 8 .u64 agileos_kvstore_placeholders[2] = {agileos_kvstore_put, agileos_kvstore_get};\n";
  text += replaceAll(placeholder, "NAME", "agileos_kvstore_put");
  text += replaceAll(placeholder, "NAME", "agileos_kvstore_get");
  text += R"(.func (.param .b32 escape_call_ret) escape_call_get(
.param .b64 escape_call_fn,
.param .b64 escape_call_key,
.param .b64 escape_call_value
)
{
.reg .b32 %r<2>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [escape_call_fn];
ld.param.u64 %rd2, [escape_call_key];
ld.param.u64 %rd3, [escape_call_value];
{
.param .b64 param0;
st.param.b64 [param0], %rd2;
.param .b64 param1;
st.param.b64 [param1], %rd3;
.param .b32 retval0;
escape_get_proto: .callprototype (.param .b32 _) _ (.param .b64 _, .param .b64 _);
call (retval0), %rd1, (param0, param1), escape_get_proto;
ld.param.b32 %r1, [retval0];
}
st.param.b32 [escape_call_ret], %r1;
ret;
}
)";
  text += R"(.visible .entry escape_put(
.param .u64 escape_put_out,
.param .u64 escape_put_key
)
{
.reg .b32 %r<2>;
.reg .b64 %rd<3>;
ld.param.u64 %rd1, [escape_put_out];
ld.param.u64 %rd2, [escape_put_key];
{
.param .b64 param0;
st.param.b64 [param0], %rd2;
.param .b64 param1;
st.param.b64 [param1], 6510615555426900570;
.param .b32 retval0;
call.uni (retval0), agileos_kvstore_put, (param0, param1);
ld.param.b32 %r1, [retval0];
}
st.global.u32 [%rd1], %r1;
ret;
}
.visible .entry escape_loaded(
.param .u64 escape_loaded_p,
.param .u64 escape_loaded_out,
.param .u32 escape_loaded_offset,
.param .u64 escape_loaded_fake
)
{
.shared .align 16 .b8 escape_slots[512];
.reg .b32 %r<6>;
.reg .b64 %rd<16>;
)";
  text += ".reg .b64 %c<" + std::to_string(kTrustedCopies) + ">;\n";
  text += R"(ld.param.u64 %rd1, [escape_loaded_p];
ld.param.u64 %rd2, [escape_loaded_out];
ld.param.u32 %r1, [escape_loaded_offset];
ld.param.u64 %rd13, [escape_loaded_fake];
)";
  // The function's address first: reading it from the table is a guarded load, whose check
  // needs registers of its own.
  text += viaTable ? "mov.u64 %rd6, agileos_kvstore_placeholders;\nld.global.u64 %rd3, [%rd6+8];\n"
                   : "mov.u64 %rd3, agileos_kvstore_get;\n";
  for (int i = 0; i < kTrustedCopies; ++i) {
    text += "st.volatile.shared.u64 [escape_slots+" + std::to_string(8 * i) + "], %rd1;\n";
  }
  for (int i = 0; i < kTrustedCopies; ++i) {
    text +=
        "ld.volatile.shared.u64 %c" + std::to_string(i) + ", [escape_slots+" + std::to_string(8 * i) + "];\n";
  }
  for (int i = 0; i < kTrustedCopies; ++i) {
    text += "st.volatile.shared.u64 [escape_slots+" + std::to_string(256 + 8 * i) + "], %c" +
            std::to_string(i) + ";\n";
  }
  text += R"(cvt.u64.u32 %rd4, %r1;
add.u64 %rd5, %rd3, %rd4;
{
.param .b64 param0;
st.param.b64 [param0], %rd5;
.param .b64 param1;
st.param.b64 [param1], %rd13;
.param .b64 param2;
st.param.b64 [param2], %rd1;
.param .b32 retval0;
call.uni (retval0), escape_call_get, (param0, param1, param2);
ld.param.b32 %r3, [retval0];
}
st.global.u32 [%rd2+4], %r3;
ret;
}
)";
  return text;
}

}  // namespace guard_escape_images
