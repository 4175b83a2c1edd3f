// A reader of bash launch scripts: runs the parts of bash that decide a command line (variables, arrays,
// expansions, word splitting, if/case/for) without running any program, and lists the commands the script runs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan::framework {

struct ShellWord {
  std::string text;  // one argument after expansion and quote removal
  // 1-based line of the script where the word's text is written: for a word that comes out of a variable or an
  // array element ("${ARGS[@]}"), the line where that value was written, so a flag points at its own line.
  int line = 0;
};

struct ShellCommand {
  std::vector<ShellWord> words;  // the simple command after expansion: words[0] is the program ("torchrun")
  int line = 0;                  // line where the command starts
  // "A=1 cmd": variables set for this command only, after expansion.
  std::map<std::string, std::string> assignments;
  // The here-document given on standard input ("sbatch <<EOF ... EOF"), after expansion when its delimiter is
  // unquoted. A job script submitted this way can be read in turn with read_shell_script.
  std::string input;
};

struct ShellScript {
  // Every simple command run, in order (branches not taken left out). Tests ([, [[, test), declarations
  // (export, declare, local, readonly, typeset) and unset change the state and are not listed.
  std::vector<ShellCommand> commands;
  std::map<std::string, std::string> variables;  // final value of every scalar variable (arrays joined by ' ')
  std::map<std::string, std::vector<std::string>> arrays;  // final elements of every array variable, in index order
  // "#SBATCH --nodes=4" / "#SBATCH -N 4" -> {"nodes","4"}; short options mapped to long (-N nodes, -n ntasks,
  // -G gpus, -t time, -J job-name, -p partition, ...). As sbatch reads them: the directives before the first
  // command of the script, and those of a here-document the script gives to a command (sbatch <<EOF).
  std::map<std::string, std::string> sbatch;
  // What the reader assumed or left out: "line 12: command substitution kept as written: $(nproc)",
  // "line 3: $1 is unset".
  std::vector<std::string> notes;
};

// Reads `text`, a bash script; `origin` names it in errors ("train.sh:14: ..."). `environment`: variables as if
// exported before the script runs (e.g. {"SLURM_NNODES","4"}); everything else starts unset, positional parameters
// ($1, $@) included. Commands are taken to succeed; file tests ([ -f x ]) to be true.
// Throws gpuplan::InputError for binary content, input over 1 MiB, syntax errors (an unterminated quote, ( array,
// $(( or ${, an if without fi, ...), arithmetic errors (division by zero, overflow) and nesting deeper than 64.
ShellScript read_shell_script(std::string_view text, std::string_view origin,
                              const std::map<std::string, std::string>& environment = {});

}  // namespace gpuplan::framework
