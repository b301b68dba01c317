// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title DrisAnchor
/// @notice Commits the Merkle root of each dris batch, in batch order, by one authorised anchorer.
/// The sequence check makes the chain itself the fence against a stale leader: a transaction built
/// for a batchSeq that another anchorer already used is refused, whatever its fees.
contract DrisAnchor {
    struct Anchor {
        uint64 batchSeq;
        uint64 timestamp;
    }

    // The anchorer and the last sequence share one storage slot, so the hot path reads one cold
    // slot and rewrites it warm instead of touching two.
    address private _anchorer;
    uint64 private _lastSeq;
    address private _owner;
    mapping(bytes32 merkleRoot => Anchor) private _anchors;

    error NotAnchorer(address caller);
    error NotOwner(address caller);
    error BadSequence(uint64 expected, uint64 got);
    error RootExists(bytes32 merkleRoot, uint64 batchSeq);
    error ZeroAddress();

    event Anchored(
        uint64 indexed batchSeq,
        bytes32 indexed merkleRoot,
        string batchId,
        string manifestCid,
        uint32 recordCount,
        uint64 timestamp
    );
    event AnchorerChanged(address indexed previousAnchorer, address indexed newAnchorer);

    constructor(address initialAnchorer) {
        if (initialAnchorer == address(0)) revert ZeroAddress();
        _owner = msg.sender;
        _anchorer = initialAnchorer;
        emit AnchorerChanged(address(0), initialAnchorer);
    }

    /// @notice Commits one batch. Only the anchorer; batchSeq must be exactly lastSequence() + 1
    /// and the root must never have been anchored.
    function anchor(
        uint64 batchSeq,
        bytes32 merkleRoot,
        uint32 recordCount,
        string calldata batchId,
        string calldata manifestCid
    ) external {
        if (msg.sender != _anchorer) revert NotAnchorer(msg.sender);
        uint64 expected;
        unchecked {
            // Cannot overflow in practice: 2^64 - 1 batches.
            expected = _lastSeq + 1;
        }
        if (batchSeq != expected) revert BadSequence(expected, batchSeq);
        Anchor storage slot = _anchors[merkleRoot];
        uint64 existing = slot.batchSeq;
        if (existing != 0) revert RootExists(merkleRoot, existing);

        uint64 timestamp = uint64(block.timestamp);
        slot.batchSeq = batchSeq;
        slot.timestamp = timestamp;
        _lastSeq = batchSeq;
        emit Anchored(batchSeq, merkleRoot, batchId, manifestCid, recordCount, timestamp);
    }

    /// @notice The owner hands the anchorer role to another address; the previous one is refused
    /// from the next transaction on.
    function setAnchorer(address newAnchorer) external {
        if (msg.sender != _owner) revert NotOwner(msg.sender);
        if (newAnchorer == address(0)) revert ZeroAddress();
        address previous = _anchorer;
        _anchorer = newAnchorer;
        emit AnchorerChanged(previous, newAnchorer);
    }

    /// @notice The batchSeq of the last anchor, 0 before the first.
    function lastSequence() external view returns (uint64) {
        return _lastSeq;
    }

    /// @notice The anchor of a root; (0, 0) when the root was never anchored.
    function anchorOf(bytes32 merkleRoot) external view returns (uint64 batchSeq, uint64 timestamp) {
        Anchor memory a = _anchors[merkleRoot];
        return (a.batchSeq, a.timestamp);
    }

    function anchorer() external view returns (address) {
        return _anchorer;
    }

    function owner() external view returns (address) {
        return _owner;
    }
}
