from ragkit.cli import main

main()
