# bash completion for gprof.
# Generated from gprof's command-line definitions by 'gprof completion bash'; do not edit.

__gprof_words() { mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur"); }
__gprof_files() { compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur"); }
__gprof_dirs() { compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur"); }
__gprof_pids() { __gprof_words "$(ps -e -o pid=,ppid= 2>/dev/null | awk '$1 != 2 && $2 != 2 { print $1 }')"; }
__gprof_backends() { __gprof_words "$(case $(uname -s) in Linux) echo perf ptrace ;; Darwin) echo mach ;; *) echo etw suspend ;; esac)"; }

_gprof() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" i j
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    case $cmd in
    "")
        __gprof_words "record report view diff convert symbolicate push inspect setup completion help --help -h --version -v"
        ;;
    record)
        for ((j = i + 1; j < COMP_CWORD; j++)); do
            if [[ ${COMP_WORDS[j]} == -- ]]; then
                if declare -F _command_offset >/dev/null; then
                    _command_offset $((j + 1))
                else
                    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
                fi
                return
            fi
        done
        case $prev in
            --tid|-t|--rate|-r|-F|--interval|-i|--duration|-d|--off-cpu-cap|--stack-size|--debuginfod|--symbol-server|--max-memory|--keep|--push|--service-name|--label|--header|--push-timeout|--max-request-size) return ;;
            --pid|-p) __gprof_pids; return ;;
            --output|-o) __gprof_files; return ;;
            --format) __gprof_words "gecko processed"; return ;;
            --event|-e) __gprof_words "cpu-clock cycles"; return ;;
            --call-graph) __gprof_words "fp dwarf"; return ;;
            --backend) __gprof_backends; return ;;
            --symbol-dir) __gprof_dirs; return ;;
            --json-output) __gprof_files; return ;;
            --ca-file) __gprof_files; return ;;
        esac
        __gprof_words "--pid -p --system-wide -a --tid -t --rate -r -F --interval -i --duration -d --output -o --format --kernel -k --off-cpu --off-cpu-cap --no-python --no-counters --event -e --call-graph --stack-size --backend --no-symbols --symbol-dir --debuginfod --symbol-server --max-memory --keep --quiet -q --json-output --json --view --push --service-name --label --header --ca-file --no-gzip --push-timeout --max-request-size --help -h --"
        ;;
    report)
        case $prev in
            --top|-n|--by|--limit|--depth|--min-pct|--tid|--thread|--process|--debuginfod|--symbol-server) return ;;
            --format) __gprof_words "text json collapsed"; return ;;
            --output|-o) __gprof_files; return ;;
            --json-output) __gprof_files; return ;;
            --pid) __gprof_pids; return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        if [[ $cur == -* ]]; then __gprof_words "--top -n --format --by --output -o --json-output --json --limit --all --no-inline --tree --depth --min-pct --pid --tid --thread --process --wide --symbol-dir --debuginfod --symbol-server --help -h"; else __gprof_files; fi
        ;;
    view)
        case $prev in
            --address|--port|--profiler-url|--debuginfod|--symbol-server) return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        if [[ $cur == -* ]]; then __gprof_words "--no-open --address --port --allow-remote --profiler-url --symbol-dir --debuginfod --symbol-server --help -h"; else __gprof_files; fi
        ;;
    diff)
        case $prev in
            --fail-if|--top|-n|--profiler-url|--by|--debuginfod|--symbol-server) return ;;
            --base) __gprof_files; return ;;
            --new) __gprof_files; return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        __gprof_words "--base --new --fail-if --top -n --json --view --no-open --profiler-url --by --symbol-dir --debuginfod --symbol-server --help -h"
        ;;
    convert)
        case $prev in
            --debuginfod|--symbol-server|--name|--service-name|--label) return ;;
            --output|-o) __gprof_files; return ;;
            --to) __gprof_words "processed gecko pprof otlp"; return ;;
            --symbol-dir) __gprof_dirs; return ;;
            --pid) __gprof_pids; return ;;
        esac
        if [[ $cur == -* ]]; then __gprof_words "--output -o --to --symbol-dir --debuginfod --symbol-server --pid --name --service-name --label --help -h"; else __gprof_files; fi
        ;;
    symbolicate)
        case $prev in
            --debuginfod|--symbol-server) return ;;
            --output|-o) __gprof_files; return ;;
            --format) __gprof_words "gecko processed"; return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        if [[ $cur == -* ]]; then __gprof_words "--output -o --format --symbol-dir --debuginfod --symbol-server --help -h"; else __gprof_files; fi
        ;;
    push)
        case $prev in
            --endpoint|--service-name|--label|--header|--timeout|--max-request-size|--debuginfod|--symbol-server) return ;;
            --ca-file) __gprof_files; return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        if [[ $cur == -* ]]; then __gprof_words "--endpoint --service-name --label --header --ca-file --no-gzip --timeout --max-request-size --symbol-dir --debuginfod --symbol-server --quiet -q --help -h"; else __gprof_files; fi
        ;;
    inspect)
        case $prev in
            --arch) return ;;
            --symbol-dir) __gprof_dirs; return ;;
        esac
        __gprof_words "--symbol-dir --arch --json --help -h"
        ;;
    setup)
        __gprof_words "--help -h"
        ;;
    completion)
        if [[ $cur == -* ]]; then __gprof_words "--help -h"; else __gprof_words "bash fish zsh"; fi
        ;;
    help)
        if [[ $cur == -* ]]; then __gprof_words ""; else __gprof_words "record report view diff convert symbolicate push inspect setup completion help"; fi
        ;;
    esac
}

complete -F _gprof gprof
